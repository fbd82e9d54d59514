-- sessions_list.sql newest first: the order ({at}, user_id, id) reversed, keyset pages before the
-- cursor $3..$5 ($3 NULL: from the newest). The same parameters.
SELECT s.user_id, s.id, s.state, (extract(epoch FROM s.update_time) * 1000000)::bigint AS marker,
       (extract(epoch FROM s.create_time) * 1000000)::bigint AS created,
       COALESCE(u.state, '{}'::jsonb) AS user_state,
       COALESCE((SELECT state FROM app_states WHERE app_name = $1), '{}'::jsonb) AS app_state,
       a.display_name, a.labels, (extract(epoch FROM a.expire_time) * 1000000)::bigint AS expires
FROM sessions s
LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = $1 AND {user}
  AND ($3::timestamp IS NULL OR (s.{at}, s.user_id, s.id) < ($3::timestamp, $4::varchar, $5::varchar))
  AND NOT coalesce(a.expire_time <= $7::timestamp, false)
  AND s.update_time BETWEEN COALESCE($8::timestamp, '-infinity') AND COALESCE($9::timestamp, 'infinity')
  AND s.create_time BETWEEN COALESCE($10::timestamp, '-infinity') AND COALESCE($11::timestamp, 'infinity')
  AND ($12::text IS NULL OR a.display_name = $12::text)
  AND ($13::jsonb IS NULL OR a.labels @> $13::jsonb)
  AND ($14::jsonb IS NULL OR s.state @> $14::jsonb)
ORDER BY s.{at} DESC, s.user_id DESC, s.id DESC
LIMIT $6
