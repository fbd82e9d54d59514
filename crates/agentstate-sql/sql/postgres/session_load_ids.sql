-- A session with the events of these ids (the compacted view's), as session_load.sql answers a
-- window: a row for the session, a row per event, in no promised order. $4: the ids (text[]); $5: the
-- time expiry is judged at (NULL: not judged): an expired session has no row.
SELECT
    s.state,
    (extract(epoch FROM s.update_time) * 1000000)::bigint AS marker,
    (extract(epoch FROM s.create_time) * 1000000)::bigint AS created,
    a.display_name,
    a.labels,
    (extract(epoch FROM a.expire_time) * 1000000)::bigint AS expires,
    COALESCE((SELECT state FROM app_states WHERE app_name = $1), '{}'::jsonb) AS app_state,
    COALESCE((SELECT state FROM user_states WHERE app_name = $1 AND user_id = $2), '{}'::jsonb) AS user_state,
    NULL::text AS id,
    NULL::text AS invocation_id,
    NULL::timestamp AS event_time,
    NULL::text AS event_data
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3 AND NOT coalesce(a.expire_time <= $5::timestamp, false)
UNION ALL
(SELECT NULL::jsonb, NULL::bigint, NULL::bigint, NULL::text, NULL::jsonb, NULL::bigint, NULL::jsonb, NULL::jsonb,
        id::text, invocation_id::text, "timestamp", event_data::text
 FROM events
 WHERE app_name = $1 AND user_id = $2 AND session_id = $3
   AND id = ANY($4::text[]))
