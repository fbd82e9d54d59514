INSERT INTO app_states (app_name, state, update_time) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE state = VALUES(state), update_time = VALUES(update_time)
