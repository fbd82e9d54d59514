SELECT user_id FROM sessions WHERE app_name = ? UNION SELECT user_id FROM user_states WHERE app_name = ? ORDER BY 1
