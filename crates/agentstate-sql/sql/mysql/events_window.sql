-- Newest first, so LIMIT keeps the most recent; the caller reverses.
SELECT id, invocation_id, `timestamp`, event_data FROM events
WHERE app_name = ? AND user_id = ? AND session_id = ? AND `timestamp` >= ?
ORDER BY `timestamp` DESC, id DESC
LIMIT ?
