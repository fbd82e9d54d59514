SELECT id, invocation_id, `timestamp`, event_data FROM events
WHERE app_name = ? AND user_id = ? AND session_id = ? AND invocation_id = ?
ORDER BY `timestamp`, id
LIMIT 1
