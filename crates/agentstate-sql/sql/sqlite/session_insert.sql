INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) VALUES (?1, ?2, ?3, ?4, ?5, ?5)
