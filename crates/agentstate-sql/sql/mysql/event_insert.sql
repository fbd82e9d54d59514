INSERT INTO events (id, app_name, user_id, session_id, invocation_id, `timestamp`, event_data) VALUES (?, ?, ?, ?, ?, ?, ?)
