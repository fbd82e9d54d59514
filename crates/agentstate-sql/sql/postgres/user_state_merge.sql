-- A user's state written without a session ($1 app, $2 user, $3 delta, $4 deleted keys, $5 now),
-- and the write logged ($6 time in µs, $7 id, $8 origin, $9 keys set, $10 keys removed): merged
-- key by key into the row (created if missing), then the deleted keys removed, in one
-- statement: atomic per key, as an append's merge of `user:` keys.
WITH merged AS (
    INSERT INTO user_states (app_name, user_id, state, update_time) VALUES ($1, $2, $3::jsonb - $4::text[], $5)
    ON CONFLICT (app_name, user_id)
    DO UPDATE SET state = (user_states.state || $3::jsonb) - $4::text[], update_time = EXCLUDED.update_time
    RETURNING 1
)
INSERT INTO agentstate_state_writes (app_name, user_id, at_micros, write_id, origin, set_keys, deleted_keys)
SELECT $1, $2, $6, $7, $8, $9, $10 FROM merged
