-- Create a session in one statement. The app and user rows are created if missing (the reference
-- needs them) and merged key by key, only when the session row was inserted.
-- $1 app  $2 user  $3 session  $4 session state  $5 user state  $6 app state  $7 now
-- $8 display name  $9 labels  $10 expire time (all NULL for a session without attributes)
-- $11 the state its history starts from (NULL when unknown)
-- When the id is taken, `expired` says whether that session expired at $7 (the caller then
-- removes it and creates again, in one transaction).
WITH s AS (
    INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)
    VALUES ($1, $2, $3, $4::jsonb, $7, $7)
    ON CONFLICT (app_name, user_id, id) DO NOTHING
    RETURNING 1
),
u_merge AS (
    INSERT INTO user_states (app_name, user_id, state, update_time)
    SELECT $1, $2, $5::jsonb, $7 FROM s WHERE $5::jsonb <> '{}'::jsonb
    ON CONFLICT (app_name, user_id)
    DO UPDATE SET state = user_states.state || EXCLUDED.state, update_time = EXCLUDED.update_time
    RETURNING state
),
u_ensure AS (
    INSERT INTO user_states (app_name, user_id, state, update_time)
    SELECT $1, $2, '{}'::jsonb, $7 FROM s WHERE $5::jsonb = '{}'::jsonb
    ON CONFLICT (app_name, user_id) DO NOTHING
),
a_merge AS (
    INSERT INTO app_states (app_name, state, update_time)
    SELECT $1, $6::jsonb, $7 FROM s WHERE $6::jsonb <> '{}'::jsonb
    ON CONFLICT (app_name)
    DO UPDATE SET state = app_states.state || EXCLUDED.state, update_time = EXCLUDED.update_time
    RETURNING state
),
a_ensure AS (
    INSERT INTO app_states (app_name, state, update_time)
    SELECT $1, '{}'::jsonb, $7 FROM s WHERE $6::jsonb = '{}'::jsonb
    ON CONFLICT (app_name) DO NOTHING
),
attributes AS (
    INSERT INTO agentstate_session_attributes
        (app_name, user_id, session_id, session_create_time, display_name, labels, expire_time)
    SELECT $1, $2, $3, $7, $8, $9::jsonb, $10 FROM s
    WHERE $8::text IS NOT NULL OR $9::jsonb IS NOT NULL OR $10::timestamp IS NOT NULL
    ON CONFLICT (app_name, user_id, session_id) DO UPDATE SET
        session_create_time = EXCLUDED.session_create_time, display_name = EXCLUDED.display_name,
        labels = EXCLUDED.labels, expire_time = EXCLUDED.expire_time
),
history_start AS (
    INSERT INTO agentstate_state_snapshots
        (app_name, user_id, session_id, session_create_time, at_micros, at_event_id, state)
    SELECT $1, $2, $3, $7, -9223372036854775808, '', $11::jsonb FROM s WHERE $11::jsonb IS NOT NULL
    ON CONFLICT (app_name, user_id, session_id, at_micros, at_event_id)
    DO UPDATE SET session_create_time = EXCLUDED.session_create_time, state = EXCLUDED.state
)
SELECT
    (SELECT count(*) FROM s) AS created,
    COALESCE((SELECT state FROM a_merge), (SELECT state FROM app_states WHERE app_name = $1), '{}'::jsonb) AS app_state,
    COALESCE((SELECT state FROM u_merge),
             (SELECT state FROM user_states WHERE app_name = $1 AND user_id = $2), '{}'::jsonb) AS user_state,
    -- Looked up only when the id was taken (the common path pays nothing for it).
    CASE WHEN NOT EXISTS (SELECT 1 FROM s) THEN
        EXISTS (SELECT 1 FROM sessions x
                JOIN agentstate_session_attributes a
                  ON a.app_name = x.app_name AND a.user_id = x.user_id AND a.session_id = x.id
                 AND a.session_create_time = x.create_time
                WHERE x.app_name = $1 AND x.user_id = $2 AND x.id = $3 AND a.expire_time <= $7)
    ELSE false END AS expired
