INSERT INTO user_states (app_name, user_id, state, update_time) VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE state = VALUES(state), update_time = VALUES(update_time)
