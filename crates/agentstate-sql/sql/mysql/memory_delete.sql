-- Removes an owner's memories with an id, from every source.
DELETE FROM agentstate_memories WHERE app_name = ? AND user_id = ? AND memory_id = ?
