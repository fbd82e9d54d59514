-- The live memories of an app with an id, of every user and source, with their user, in
-- (user, source) order; then the limit (a memory named by its id alone: Memory Bank's names).
SELECT user_id, memory_id, source, create_micros, expire_micros, author, `timestamp`, content, custom_metadata
FROM agentstate_memories
WHERE app_name = ? AND memory_id = ? AND (expire_micros IS NULL OR expire_micros > ?)
ORDER BY user_id, source
LIMIT ?
