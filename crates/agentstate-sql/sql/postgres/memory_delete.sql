-- Removes an owner's memories with an id, from every source.
DELETE FROM agentstate_memories WHERE app_name = $1 AND user_id = $2 AND memory_id = $3
