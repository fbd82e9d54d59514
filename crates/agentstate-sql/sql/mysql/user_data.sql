-- What an erasure of a user would remove: sessions, events, user: state keys.
SELECT
  (SELECT count(*) FROM sessions WHERE app_name = ? AND user_id = ?) AS sessions,
  (SELECT count(*) FROM events WHERE app_name = ? AND user_id = ?) AS events,
  (SELECT CAST(coalesce(sum(JSON_LENGTH(state)), 0) AS SIGNED) FROM user_states WHERE app_name = ? AND user_id = ?) AS user_keys
