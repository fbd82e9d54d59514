INSERT INTO user_states (app_name, user_id, state, update_time) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (app_name, user_id) DO UPDATE SET state = excluded.state, update_time = excluded.update_time
