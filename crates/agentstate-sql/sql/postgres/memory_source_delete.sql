-- Removes one memory of a source.
DELETE FROM agentstate_memories WHERE app_name = $1 AND user_id = $2 AND source = $3 AND memory_id = $4
