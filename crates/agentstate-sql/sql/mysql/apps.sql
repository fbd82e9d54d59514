SELECT app_name FROM sessions UNION SELECT app_name FROM app_states UNION SELECT app_name FROM user_states ORDER BY 1
