-- A session's event count, or no row for no session or one expired at the fourth parameter
-- (NULL: expiry not judged). Served by the events index.
SELECT (SELECT count(*) FROM events e WHERE e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.id) AS n
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ? AND s.user_id = ? AND s.id = ? AND NOT coalesce(a.expire_time <= ?, FALSE)
