-- The users of an app that have a session with this id, left out those expired at $3 (NULL:
-- expiry not judged). Served by idx_sessions_app_id.
SELECT s.user_id FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = $1 AND s.id = $2 AND NOT coalesce(a.expire_time <= $3::timestamp, false)
ORDER BY s.user_id
