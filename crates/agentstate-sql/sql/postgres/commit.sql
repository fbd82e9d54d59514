-- One append in one statement (one round trip, one transaction). The UPDATE of the session row is
-- the compare-and-set on the storage marker (update_time); everything else hangs off its
-- RETURNING, so either all of it happens or none (data-modifying CTEs always run to completion). State merges are `||` (per key, atomic): a
-- concurrent writer of other keys of the same user/app row loses nothing.
-- $1 app  $2 user  $3 session  $4 event id  $5 invocation id  $6 event time (= new marker)
-- $7 event_data  $8 expected marker  $9 session delta  $10 user delta or NULL  $11 app delta or NULL
WITH dup AS (
    SELECT invocation_id, (extract(epoch FROM "timestamp") * 1000000)::bigint AS micros, event_data
    FROM events WHERE id = $4 AND app_name = $1 AND user_id = $2 AND session_id = $3
),
s AS (
    UPDATE sessions SET state = state || $9::jsonb, update_time = $6
    WHERE app_name = $1 AND user_id = $2 AND id = $3 AND update_time = $8 AND NOT EXISTS (SELECT 1 FROM dup)
    RETURNING 1
),
u AS (
    INSERT INTO user_states (app_name, user_id, state, update_time)
    SELECT $1, $2, $10::jsonb, $6 FROM s WHERE $10::jsonb IS NOT NULL
    ON CONFLICT (app_name, user_id)
    DO UPDATE SET state = user_states.state || EXCLUDED.state, update_time = EXCLUDED.update_time
    RETURNING 1
),
a AS (
    INSERT INTO app_states (app_name, state, update_time)
    SELECT $1, $11::jsonb, $6 FROM s WHERE $11::jsonb IS NOT NULL
    ON CONFLICT (app_name)
    DO UPDATE SET state = app_states.state || EXCLUDED.state, update_time = EXCLUDED.update_time
    RETURNING 1
),
e AS (
    INSERT INTO events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
    SELECT $4, $1, $2, $3, $5, $6, $7::jsonb FROM s
    RETURNING 1
)
SELECT
    (SELECT count(*) FROM s) AS committed,
    (SELECT invocation_id FROM dup) AS dup_invocation_id,
    (SELECT micros FROM dup) AS dup_micros,
    (SELECT event_data FROM dup) AS dup_event_data,
    (SELECT (extract(epoch FROM update_time) * 1000000)::bigint FROM sessions
     WHERE app_name = $1 AND user_id = $2 AND id = $3) AS current_marker
