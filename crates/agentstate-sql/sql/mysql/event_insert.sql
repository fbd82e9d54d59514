INSERT INTO events (app_name, user_id, session_id, id, invocation_id, `timestamp`, event_data) VALUES (?, ?, ?, ?, ?, ?, ?)
