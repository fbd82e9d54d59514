-- Every version of an artifact.
DELETE FROM agentstate_artifacts WHERE app_name = ? AND user_id = ? AND session_id = ? AND name = ?
