-- The users of an app that have a session with this id (served by idx_sessions_app_id).
SELECT user_id FROM sessions WHERE app_name = ?1 AND id = ?2 ORDER BY user_id
