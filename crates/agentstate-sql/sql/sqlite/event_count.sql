-- A session's event count, or no row for no session (served by the events index).
SELECT (SELECT count(*) FROM events WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3) AS n
FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND id = ?3
