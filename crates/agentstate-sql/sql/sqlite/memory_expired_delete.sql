-- Removes up to ?2 memories that expired at or before ?1, the oldest expiry first.
DELETE FROM agentstate_memories WHERE row_id IN (
	SELECT row_id FROM agentstate_memories WHERE expire_micros IS NOT NULL AND expire_micros <= ?1
	ORDER BY expire_micros LIMIT ?2
)
