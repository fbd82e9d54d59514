SELECT state FROM user_states WHERE app_name = ?1 AND user_id = ?2
