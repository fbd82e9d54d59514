-- How many live memories an owner has.
SELECT COUNT(*) AS n FROM agentstate_memories
WHERE app_name = $1 AND user_id = $2 AND (expire_micros IS NULL OR expire_micros > $3)
