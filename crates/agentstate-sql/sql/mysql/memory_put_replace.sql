-- Stores a memory unless its owner deleted the id (the last three: the owner and id again); one
-- its source holds already is rewritten in place, keeping its create time.
INSERT INTO agentstate_memories
  (app_name, user_id, source, memory_id, create_micros, expire_micros, author, `timestamp`, content, custom_metadata, terms)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM agentstate_memory_deletions WHERE app_name = ? AND user_id = ? AND memory_id = ?)
ON DUPLICATE KEY UPDATE
  expire_micros = VALUES(expire_micros), author = VALUES(author), `timestamp` = VALUES(`timestamp`),
  content = VALUES(content), custom_metadata = VALUES(custom_metadata), terms = VALUES(terms)
