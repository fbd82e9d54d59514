-- Removes one memory of a source.
DELETE FROM agentstate_memories WHERE app_name = ? AND user_id = ? AND source = ? AND memory_id = ?
