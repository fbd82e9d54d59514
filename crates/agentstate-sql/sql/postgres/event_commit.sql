-- One append in one statement (one round trip, one transaction). The UPDATE of the session row is
-- the compare-and-set on the storage marker (update_time); everything else hangs off its
-- RETURNING, so either all of it happens or none (data-modifying CTEs always run to completion). State merges are `||` (per key, atomic): a
-- concurrent writer of other keys of the same user/app row loses nothing.
-- $1 app  $2 user  $3 session  $4 event id  $5 invocation id  $6 event time (= new marker)
-- $7 event_data  $8 expected marker  $9 session delta  $10 user delta or NULL  $11 app delta or NULL
-- $12 $13 $14 session, user and app keys to delete after the merge (text[]; each is also in its
-- delta, as null, so a deletion alone still passes the NOT NULL guards)
-- $15 the time expiry is judged at (NULL: not judged): an expired session is missing
-- $16 where the refresh policy moves an expiring session's expire time (NULL: it stays)
-- $17 the event's facts for the compacted view (agentstate_event_facts)
-- The duplicate check must be a primary-key lookup (leading column `id`). On young tables the
-- planner may prefer idx_events_app_user_session_ts_id, which scans the whole session: comparing
-- its prefix columns under COLLATE "C" (same equality: both collations are deterministic) leaves
-- the primary key as the only usable index.
WITH dup AS (
    SELECT invocation_id, (extract(epoch FROM "timestamp") * 1000000)::bigint AS micros, event_data
    FROM events
    WHERE id = $4 AND app_name = $1 COLLATE "C" AND user_id = $2 COLLATE "C" AND session_id = $3 COLLATE "C"
),
live AS (
    SELECT x.create_time FROM sessions x
    LEFT JOIN agentstate_session_attributes a
      ON a.app_name = x.app_name AND a.user_id = x.user_id AND a.session_id = x.id AND a.session_create_time = x.create_time
    WHERE x.app_name = $1 AND x.user_id = $2 AND x.id = $3 AND NOT coalesce(a.expire_time <= $15::timestamp, false)
),
s AS (
    UPDATE sessions SET state = (state || $9::jsonb) - $12::text[], update_time = $6
    WHERE app_name = $1 AND user_id = $2 AND id = $3 AND update_time = $8
      AND EXISTS (SELECT 1 FROM live) AND NOT EXISTS (SELECT 1 FROM dup)
    RETURNING 1
),
refresh AS (
    UPDATE agentstate_session_attributes SET expire_time = $16::timestamp
    WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND session_create_time = (SELECT create_time FROM live)
      AND expire_time < $16::timestamp AND EXISTS (SELECT 1 FROM s)
),
-- The user and app rows exist (create makes them), so a plain UPDATE merges; the upsert only
-- runs for a row another program left out.
u AS (
    UPDATE user_states SET state = (state || $10::jsonb) - $13::text[], update_time = $6
    WHERE app_name = $1 AND user_id = $2 AND $10::jsonb IS NOT NULL AND EXISTS (SELECT 1 FROM s)
    RETURNING 1
),
u_missing AS (
    INSERT INTO user_states (app_name, user_id, state, update_time)
    SELECT $1, $2, $10::jsonb - $13::text[], $6 FROM s WHERE $10::jsonb IS NOT NULL AND NOT EXISTS (SELECT 1 FROM u)
    ON CONFLICT (app_name, user_id)
    DO UPDATE SET state = (user_states.state || $10::jsonb) - $13::text[], update_time = EXCLUDED.update_time
),
a AS (
    UPDATE app_states SET state = (state || $11::jsonb) - $14::text[], update_time = $6
    WHERE app_name = $1 AND $11::jsonb IS NOT NULL AND EXISTS (SELECT 1 FROM s)
    RETURNING 1
),
a_missing AS (
    INSERT INTO app_states (app_name, state, update_time)
    SELECT $1, $11::jsonb - $14::text[], $6 FROM s WHERE $11::jsonb IS NOT NULL AND NOT EXISTS (SELECT 1 FROM a)
    ON CONFLICT (app_name)
    DO UPDATE SET state = (app_states.state || $11::jsonb) - $14::text[], update_time = EXCLUDED.update_time
),
e AS (
    INSERT INTO events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
    SELECT $4, $1, $2, $3, $5, $6, $7::jsonb FROM s
    RETURNING 1
),
f AS (
    INSERT INTO agentstate_event_facts (app_name, user_id, session_id, event_id, invocation_id, micros, facts)
    SELECT $1, $2, $3, $4, $5, (extract(epoch FROM $6::timestamp) * 1000000)::bigint, $17 FROM e
    ON CONFLICT (app_name, user_id, session_id, event_id)
    DO UPDATE SET invocation_id = EXCLUDED.invocation_id, micros = EXCLUDED.micros, facts = EXCLUDED.facts
)
SELECT
    (SELECT count(*) FROM s) AS committed,
    EXISTS (SELECT 1 FROM live) AS live,
    (SELECT invocation_id FROM dup) AS dup_invocation_id,
    (SELECT micros FROM dup) AS dup_micros,
    (SELECT event_data FROM dup) AS dup_event_data
