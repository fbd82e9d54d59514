-- Remembers that an owner deleted an id.
INSERT IGNORE INTO agentstate_memory_deletions (app_name, user_id, memory_id) VALUES (?, ?, ?)
