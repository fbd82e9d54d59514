-- Every version of every artifact of a session (not the user's user-scoped ones).
DELETE FROM agentstate_artifacts WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND session_id <> ''
