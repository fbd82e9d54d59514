SELECT id, invocation_id, timestamp, event_data FROM events WHERE id = ?4 AND app_name = ?1 AND user_id = ?2 AND session_id = ?3
