-- The number the next version of an artifact takes: one past its newest, 0 for none.
SELECT COALESCE(MAX(version) + 1, 0) AS next FROM agentstate_artifacts WHERE app_name = ? AND user_id = ? AND session_id = ? AND name = ?
