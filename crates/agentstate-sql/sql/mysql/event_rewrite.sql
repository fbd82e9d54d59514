UPDATE events SET event_data = ? WHERE app_name = ? AND user_id = ? AND session_id = ? AND id = ?
