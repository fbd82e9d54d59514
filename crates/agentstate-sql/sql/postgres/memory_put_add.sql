-- Adds a memory unless its owner deleted the id ($12-$14: the owner and id again) or its source
-- holds it already.
INSERT INTO agentstate_memories
    (app_name, user_id, source, memory_id, create_micros, expire_micros, author, "timestamp", content, custom_metadata, terms)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11
WHERE NOT EXISTS (SELECT 1 FROM agentstate_memory_deletions WHERE app_name = $12 AND user_id = $13 AND memory_id = $14)
ON CONFLICT (app_name, user_id, source, memory_id) DO NOTHING
