-- Stores a memory unless its owner deleted the id ($12-$14: the owner and id again); one its
-- source holds already is rewritten in place, keeping its create time.
INSERT INTO agentstate_memories
    (app_name, user_id, source, memory_id, create_micros, expire_micros, author, "timestamp", content, custom_metadata, terms)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11
WHERE NOT EXISTS (SELECT 1 FROM agentstate_memory_deletions WHERE app_name = $12 AND user_id = $13 AND memory_id = $14)
ON CONFLICT (app_name, user_id, source, memory_id) DO UPDATE SET
    expire_micros = excluded.expire_micros, author = excluded.author, "timestamp" = excluded."timestamp",
    content = excluded.content, custom_metadata = excluded.custom_metadata, terms = excluded.terms
