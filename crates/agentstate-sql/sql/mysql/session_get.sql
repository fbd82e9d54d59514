-- A session's state and storage marker, with its creation time and attributes; no row if it
-- expired at the fourth parameter (NULL: expiry not judged).
SELECT s.state, s.update_time, s.create_time, a.display_name, a.labels, a.expire_time
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ? AND s.user_id = ? AND s.id = ? AND NOT coalesce(a.expire_time <= ?, FALSE)
