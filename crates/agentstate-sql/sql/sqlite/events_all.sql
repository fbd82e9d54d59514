-- Every event at or after a time, oldest first (a window with no count: nothing to reverse).
-- Served by idx_events_app_user_session_ts_id, read backwards. ?4: lower bound on timestamp.
SELECT id, invocation_id, timestamp, event_data FROM events
WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND timestamp >= ?4
ORDER BY timestamp, id
