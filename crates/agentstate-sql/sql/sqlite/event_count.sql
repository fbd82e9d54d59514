-- A session's event count, or no row for no session or one expired at ?4 (NULL: expiry not
-- judged). Served by the events index.
SELECT (SELECT count(*) FROM events WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3) AS n
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ?1 AND s.user_id = ?2 AND s.id = ?3 AND NOT coalesce(a.expire_time <= ?4, FALSE)
