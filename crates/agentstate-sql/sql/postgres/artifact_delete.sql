-- Every version of an artifact.
DELETE FROM agentstate_artifacts WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND name = $4
