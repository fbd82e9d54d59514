-- The ids a source of an owner holds.
SELECT memory_id FROM agentstate_memories WHERE app_name = ? AND user_id = ? AND source = ?
