-- Keeps a history snapshot for the session as it exists now (nothing if it does not).
INSERT OR REPLACE INTO agentstate_state_snapshots
    (app_name, user_id, session_id, session_create_time, at_micros, at_event_id, state)
SELECT app_name, user_id, id, create_time, ?4, ?5, ?6 FROM sessions
WHERE app_name = ?1 AND user_id = ?2 AND id = ?3
