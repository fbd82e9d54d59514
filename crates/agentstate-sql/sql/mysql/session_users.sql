-- The users of an app that have a session with this id, left out those expired at the third
-- parameter (NULL: expiry not judged).
SELECT s.user_id FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ? AND s.id = ? AND NOT coalesce(a.expire_time <= ?, FALSE)
ORDER BY s.user_id
