SELECT state, update_time FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?
