-- The row of an owner's source, created if missing: a write locks it first, so writes of one
-- source take turns.
INSERT INTO agentstate_memory_sources (app_name, user_id, source) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE source = VALUES(source)
