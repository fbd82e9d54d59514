-- Every version of every artifact of a session (not the user's user-scoped ones).
DELETE FROM agentstate_artifacts WHERE app_name = ? AND user_id = ? AND session_id = ? AND session_id <> ''
