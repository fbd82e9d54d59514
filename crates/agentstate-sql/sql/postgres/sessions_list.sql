-- A page of sessions in the order ({at}, user_id, id): a template (see src/list.rs), {at} the
-- order's column, {user} `s.user_id = $2` or `$2::varchar IS NULL` (every user). $3..$5 is the
-- cursor ($3 NULL: from the start); sessions expired at $7 are left out (NULL: expiry not judged);
-- $8..$11 bound the update and create times (NULL: open); $12 is the display name, $13 labels and
-- $14 session state the session's must contain (NULL: any).
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
  AND (s.{at}, s.user_id, s.id) > (COALESCE($3::timestamp, '-infinity'::timestamp), $4::varchar, $5::varchar)
  AND NOT coalesce(a.expire_time <= $7::timestamp, false)
  AND s.update_time BETWEEN COALESCE($8::timestamp, '-infinity') AND COALESCE($9::timestamp, 'infinity')
  AND s.create_time BETWEEN COALESCE($10::timestamp, '-infinity') AND COALESCE($11::timestamp, 'infinity')
  AND ($12::text IS NULL OR a.display_name = $12::text)
  AND ($13::jsonb IS NULL OR a.labels @> $13::jsonb)
  AND ($14::jsonb IS NULL OR s.state @> $14::jsonb)
ORDER BY s.{at}, s.user_id, s.id
LIMIT $6
