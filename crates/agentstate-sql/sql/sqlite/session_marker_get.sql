SELECT update_time FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND id = ?3
