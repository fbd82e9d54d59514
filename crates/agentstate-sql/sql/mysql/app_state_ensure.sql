INSERT INTO app_states (app_name, state, update_time) VALUES (?, '{}', ?)
ON DUPLICATE KEY UPDATE app_name = app_name
