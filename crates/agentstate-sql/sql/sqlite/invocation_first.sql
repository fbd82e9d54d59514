SELECT id, invocation_id, timestamp, event_data FROM events
WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND invocation_id = ?4
ORDER BY timestamp, id
LIMIT 1
