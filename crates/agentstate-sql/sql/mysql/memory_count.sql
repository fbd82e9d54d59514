-- How many live memories an owner has.
SELECT COUNT(*) AS n FROM agentstate_memories
WHERE app_name = ? AND user_id = ? AND (expire_micros IS NULL OR expire_micros > ?)
