-- A session with its window of events, in one statement (one snapshot): one row per event, newest
-- first (so LIMIT keeps the most recent; the caller reverses), or a single row with NULL event
-- columns when the window is empty. The states and labels are on the first row only. Rows rather
-- than one aggregated JSON array: building the array costs the server twice what sending the rows
-- does, and the client would parse it twice. $4: lower time bound or NULL; $5: limit or NULL.
SELECT
    CASE WHEN COALESCE(w.n, 1) = 1 THEN s.state END AS state,
    (extract(epoch FROM s.update_time) * 1000000)::bigint AS marker,
    (extract(epoch FROM s.create_time) * 1000000)::bigint AS created,
    a.display_name,
    CASE WHEN COALESCE(w.n, 1) = 1 THEN a.labels END AS labels,
    (extract(epoch FROM a.expire_time) * 1000000)::bigint AS expires,
    CASE WHEN COALESCE(w.n, 1) = 1
         THEN COALESCE((SELECT state FROM app_states WHERE app_name = $1), '{}'::jsonb) END AS app_state,
    CASE WHEN COALESCE(w.n, 1) = 1
         THEN COALESCE((SELECT state FROM user_states WHERE app_name = $1 AND user_id = $2), '{}'::jsonb) END AS user_state,
    w.id,
    w.invocation_id,
    w.micros,
    w.event_data::text AS event_data
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
LEFT JOIN LATERAL (
    SELECT id, invocation_id, (extract(epoch FROM "timestamp") * 1000000)::bigint AS micros, event_data,
           row_number() OVER (ORDER BY "timestamp" DESC, id DESC) AS n
    FROM events
    WHERE app_name = $1 AND user_id = $2 AND session_id = $3
      AND "timestamp" >= COALESCE($4::timestamp, '-infinity'::timestamp)
    ORDER BY "timestamp" DESC, id DESC
    LIMIT $5) w ON true
WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
ORDER BY w.n
