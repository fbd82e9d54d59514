-- Removes every memory of an owner, then the ids it deleted and its sources.
DELETE FROM agentstate_memories WHERE app_name = ? AND user_id = ?;
DELETE FROM agentstate_memory_deletions WHERE app_name = ? AND user_id = ?;
DELETE FROM agentstate_memory_sources WHERE app_name = ? AND user_id = ?
