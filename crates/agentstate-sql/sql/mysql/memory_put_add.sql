-- Adds a memory unless its owner deleted the id (the last three: the owner and id again) or its
-- source holds it already.
INSERT IGNORE INTO agentstate_memories
  (app_name, user_id, source, memory_id, create_micros, expire_micros, author, `timestamp`, content, custom_metadata, terms)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM agentstate_memory_deletions WHERE app_name = ? AND user_id = ? AND memory_id = ?)
