SELECT state FROM user_states WHERE app_name = ? AND user_id = ?
