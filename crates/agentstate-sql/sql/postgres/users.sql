SELECT user_id FROM sessions WHERE app_name = $1 UNION SELECT user_id FROM user_states WHERE app_name = $1 ORDER BY 1
