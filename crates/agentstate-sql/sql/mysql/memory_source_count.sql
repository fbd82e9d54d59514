-- How many memories a source of an owner holds.
SELECT COUNT(*) AS n FROM agentstate_memories WHERE app_name = ? AND user_id = ? AND source = ?
