-- The number the next version of an artifact takes: one past its newest, 0 for none.
SELECT COALESCE(MAX(version) + 1, 0) AS next FROM agentstate_artifacts WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND name = $4
