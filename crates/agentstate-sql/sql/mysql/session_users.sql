-- The users of an app that have a session with this id.
SELECT user_id FROM sessions WHERE app_name = ? AND id = ? ORDER BY user_id
