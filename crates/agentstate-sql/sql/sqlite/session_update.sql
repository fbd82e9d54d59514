UPDATE sessions SET state = ?4, update_time = ?5 WHERE app_name = ?1 AND user_id = ?2 AND id = ?3
