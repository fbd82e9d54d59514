-- One user's sessions (?6), as sessions_list.sql (expiry judged at ?7); a statement of its own so that SQLite, which
-- plans a statement once, looks up the user's rows by the primary key.
SELECT s.user_id, s.id, s.state, s.update_time, s.create_time, a.display_name, a.labels, a.expire_time
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ?1 AND s.user_id = ?6 AND (s.update_time, s.user_id, s.id) > (?2, ?3, ?4)
  AND NOT coalesce(a.expire_time <= ?7, FALSE)
ORDER BY s.update_time, s.user_id, s.id
LIMIT ?5
