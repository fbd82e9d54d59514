-- An app's state written without a session ($1 app, $2 delta, $3 deleted keys, $4 now), and the
-- write logged ($5 time in µs, $6 id, $7 origin, $8 keys set, $9 keys removed; user ''): merged
-- key by key into the row (created if missing), then the deleted keys removed, in one
-- statement: atomic per key, as an append's merge of `app:` keys.
WITH merged AS (
    INSERT INTO app_states (app_name, state, update_time) VALUES ($1, $2::jsonb - $3::text[], $4)
    ON CONFLICT (app_name)
    DO UPDATE SET state = (app_states.state || $2::jsonb) - $3::text[], update_time = EXCLUDED.update_time
    RETURNING 1
)
INSERT INTO agentstate_state_writes (app_name, user_id, at_micros, write_id, origin, set_keys, deleted_keys)
SELECT $1, '', $5, $6, $7, $8, $9 FROM merged
