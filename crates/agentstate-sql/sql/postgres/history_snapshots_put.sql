-- Keeps history snapshots for the session as it exists now (nothing if it does not), in one
-- statement: $4 is a JSON array of {"at_micros", "at_event_id", "state"}.
INSERT INTO agentstate_state_snapshots
    (app_name, user_id, session_id, session_create_time, at_micros, at_event_id, state)
SELECT x.app_name, x.user_id, x.id, x.create_time, (e->>'at_micros')::bigint, e->>'at_event_id', e->'state'
FROM sessions x, jsonb_array_elements($4::jsonb) e
WHERE x.app_name = $1 AND x.user_id = $2 AND x.id = $3
ON CONFLICT (app_name, user_id, session_id, at_micros, at_event_id)
DO UPDATE SET session_create_time = EXCLUDED.session_create_time, state = EXCLUDED.state
