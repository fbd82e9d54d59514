-- Keyset pagination in the order (update_time, user_id, id). Parameters: app, user filter (twice,
-- NULL for all users), cursor time (twice, NULL for the first page), cursor user, cursor id, the
-- time expiry is judged at (NULL: not judged), limit.
SELECT s.user_id, s.id, s.state, s.update_time, s.create_time, u.state AS user_state,
       a.display_name, a.labels, a.expire_time
FROM sessions s
LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ? AND (? IS NULL OR s.user_id = ?)
  AND (? IS NULL OR (s.update_time, s.user_id, s.id) > (?, ?, ?))
  AND NOT coalesce(a.expire_time <= ?, FALSE)
ORDER BY s.update_time, s.user_id, s.id
LIMIT ?
