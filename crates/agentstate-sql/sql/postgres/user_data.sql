-- What an erasure of a user would remove: sessions, events, user: state keys.
SELECT
  (SELECT count(*) FROM sessions WHERE app_name = $1 AND user_id = $2) AS sessions,
  (SELECT count(*) FROM events WHERE app_name = $1 AND user_id = $2) AS events,
  (SELECT count(*) FROM user_states, jsonb_object_keys(user_states.state) WHERE app_name = $1 AND user_id = $2) AS user_keys
