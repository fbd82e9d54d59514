-- sessions_list.sql newest first: the order ({at}, user_id, id) reversed, keyset pages before the
-- cursor. The same parameters.
SELECT s.user_id, s.id, s.state, s.update_time, s.create_time, u.state AS user_state,
       a.display_name, a.labels, a.expire_time
FROM sessions s
LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ? AND {user}
  AND (? IS NULL OR (s.{at}, s.user_id, s.id) < (?, ?, ?))
  AND NOT coalesce(a.expire_time <= ?, FALSE)
  AND (? IS NULL OR s.update_time >= ?) AND (? IS NULL OR s.update_time <= ?)
  AND (? IS NULL OR s.create_time >= ?) AND (? IS NULL OR s.create_time <= ?)
  AND (? IS NULL OR a.display_name = ?)
  AND (? IS NULL OR JSON_CONTAINS(a.labels, ?))
  AND (? IS NULL OR JSON_CONTAINS(s.state, ?))
ORDER BY s.{at} DESC, s.user_id DESC, s.id DESC
LIMIT ?
