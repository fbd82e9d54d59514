-- Newest first, so LIMIT keeps the most recent; the caller reverses. Served by
-- idx_events_app_user_session_ts_id. ?4: lower bound on timestamp; ?5: limit (a window with none
-- reads events_all.sql, oldest first).
SELECT id, invocation_id, timestamp, event_data FROM events
WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND timestamp >= ?4
ORDER BY timestamp DESC, id DESC
LIMIT ?5
