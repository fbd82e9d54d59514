-- How many memories a source of an owner holds.
SELECT COUNT(*) FROM agentstate_memories WHERE app_name = ?1 AND user_id = ?2 AND source = ?3
