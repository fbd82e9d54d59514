UPDATE sessions SET update_time = ? WHERE app_name = ? AND user_id = ? AND id = ?
