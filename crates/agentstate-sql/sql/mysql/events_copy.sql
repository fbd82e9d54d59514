-- Copies a session's events up to a position into another session of the same app and user, as
-- they are.
INSERT INTO events (id, app_name, user_id, session_id, invocation_id, `timestamp`, event_data)
SELECT id, app_name, user_id, ?, invocation_id, `timestamp`, event_data FROM events
WHERE app_name = ? AND user_id = ? AND session_id = ? AND (`timestamp` < ? OR (`timestamp` = ? AND id <= ?))
