UPDATE events SET event_data = ?5 WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND id = ?4
