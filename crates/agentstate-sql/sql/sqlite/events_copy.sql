-- Copies session ?3's events up to (?5, ?6) into session ?4 of the same app and user, as they are.
INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, event_data)
SELECT id, app_name, user_id, ?4, invocation_id, timestamp, event_data FROM events
WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND (timestamp < ?5 OR (timestamp = ?5 AND id <= ?6))
