-- A write of app or user state without a session, logged (user '' for the app's): when, its id,
-- what wrote it, the keys it set and removed (JSON arrays). No values.
INSERT INTO agentstate_state_writes (app_name, user_id, at_micros, write_id, origin, set_keys, deleted_keys)
VALUES (?, ?, ?, ?, ?, ?, ?)
