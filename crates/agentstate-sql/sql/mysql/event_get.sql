SELECT invocation_id, `timestamp`, event_data FROM events WHERE id = ? AND app_name = ? AND user_id = ? AND session_id = ?
