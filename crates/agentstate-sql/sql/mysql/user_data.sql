-- What an erasure of a user would remove: sessions, events, user: state keys.
WITH p AS (SELECT ? AS app_name, ? AS user_id)
SELECT
  (SELECT count(*) FROM p JOIN sessions s ON s.app_name = p.app_name AND s.user_id = p.user_id) AS sessions,
  (SELECT count(*) FROM p JOIN events e ON e.app_name = p.app_name AND e.user_id = p.user_id) AS events,
  (SELECT CAST(coalesce(sum(JSON_LENGTH(u.state)), 0) AS SIGNED)
   FROM p JOIN user_states u ON u.app_name = p.app_name AND u.user_id = p.user_id) AS user_keys
