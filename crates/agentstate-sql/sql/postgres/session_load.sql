-- A session with its window of events, in one statement (one snapshot). Events newest first, so
-- LIMIT keeps the most recent; the caller reverses. $4: lower time bound or NULL; $5: limit or NULL.
SELECT
    s.state,
    (extract(epoch FROM s.update_time) * 1000000)::bigint AS marker,
    (extract(epoch FROM s.create_time) * 1000000)::bigint AS created,
    a.display_name,
    a.labels,
    (extract(epoch FROM a.expire_time) * 1000000)::bigint AS expires,
    COALESCE((SELECT state FROM app_states WHERE app_name = $1), '{}'::jsonb) AS app_state,
    COALESCE((SELECT state FROM user_states WHERE app_name = $1 AND user_id = $2), '{}'::jsonb) AS user_state,
    (SELECT COALESCE(json_agg(json_build_object('id', w.id, 'invocation_id', w.invocation_id, 'micros', w.micros, 'event_data', w.event_data)), '[]'::json)
     FROM (SELECT id, invocation_id, (extract(epoch FROM "timestamp") * 1000000)::bigint AS micros, event_data
           FROM events
           WHERE app_name = $1 AND user_id = $2 AND session_id = $3
             AND "timestamp" >= COALESCE($4::timestamp, '-infinity'::timestamp)
           ORDER BY "timestamp" DESC, id DESC
           LIMIT $5) w) AS events
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
