-- A session's event count, or no row for no session (served by the events index).
SELECT (SELECT count(*) FROM events WHERE app_name = ? AND user_id = ? AND session_id = ?) AS n
FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?
