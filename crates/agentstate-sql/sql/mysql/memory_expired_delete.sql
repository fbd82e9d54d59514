-- Removes up to the second parameter's number of memories that expired at or before the first,
-- the oldest expiry first.
DELETE FROM agentstate_memories WHERE expire_micros IS NOT NULL AND expire_micros <= ?
ORDER BY expire_micros LIMIT ?
