INSERT INTO user_states (app_name, user_id, state, update_time) VALUES (?, ?, '{}', ?)
ON DUPLICATE KEY UPDATE app_name = app_name
