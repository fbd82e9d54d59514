INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, event_data) VALUES (?4, ?1, ?2, ?3, ?5, ?6, ?7)
