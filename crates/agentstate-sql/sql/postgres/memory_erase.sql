-- Removes every memory of an owner, then the ids it deleted and its sources.
DELETE FROM agentstate_memories WHERE app_name = $1 AND user_id = $2;
DELETE FROM agentstate_memory_deletions WHERE app_name = $1 AND user_id = $2;
DELETE FROM agentstate_memory_sources WHERE app_name = $1 AND user_id = $2
