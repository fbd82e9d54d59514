-- sessions_list.sql newest first: the order ({at}, user_id, id) reversed, keyset pages before the
-- cursor ?2..?4 ('~', '', '' for the first page: after every stored time). The same parameters.
SELECT s.user_id, s.id, s.state, s.update_time, s.create_time, a.display_name, a.labels, a.expire_time
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ?1 AND {user}
  AND (s.{at}, s.user_id, s.id) < (?2, ?3, ?4)
  AND NOT coalesce(a.expire_time <= ?7, FALSE)
  AND s.update_time BETWEEN ?8 AND ?9 AND s.create_time BETWEEN ?10 AND ?11
  AND (?12 IS NULL OR a.display_name = ?12)
ORDER BY s.{at} DESC, s.user_id DESC, s.id DESC
LIMIT ?5
