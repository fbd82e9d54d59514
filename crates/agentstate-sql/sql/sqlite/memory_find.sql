-- The live memories of an app with an id (?1, ?2), of every user and source, with their user,
-- in (user, source) order; at most ?4 (a memory named by its id alone: Memory Bank's names).
SELECT user_id, memory_id, source, create_micros, expire_micros, author, timestamp, content, custom_metadata
FROM agentstate_memories
WHERE app_name = ?1 AND memory_id = ?2 AND (expire_micros IS NULL OR expire_micros > ?3)
ORDER BY user_id, source
LIMIT ?4
