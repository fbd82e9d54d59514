-- Remembers that an owner deleted an id.
INSERT INTO agentstate_memory_deletions (app_name, user_id, memory_id) VALUES (?1, ?2, ?3)
ON CONFLICT (app_name, user_id, memory_id) DO NOTHING
