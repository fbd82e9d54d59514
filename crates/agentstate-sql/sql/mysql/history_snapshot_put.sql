-- Keeps a history snapshot for the session as it exists now (nothing if it does not).
INSERT INTO agentstate_state_snapshots
    (app_name, user_id, session_id, session_create_time, at_micros, at_event_id, state)
SELECT app_name, user_id, id, create_time, ?, ?, ? FROM sessions
WHERE app_name = ? AND user_id = ? AND id = ?
ON DUPLICATE KEY UPDATE session_create_time = VALUES(session_create_time), state = VALUES(state)
