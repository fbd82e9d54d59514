SELECT state FROM sessions WHERE app_name = ? AND user_id = ? AND id = ? FOR UPDATE
