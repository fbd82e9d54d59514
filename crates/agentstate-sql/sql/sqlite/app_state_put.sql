INSERT INTO app_states (app_name, state, update_time) VALUES (?1, ?2, ?3)
ON CONFLICT (app_name) DO UPDATE SET state = excluded.state, update_time = excluded.update_time
