-- Keyset pagination in the order (update_time, user_id, id). Parameters: app, user filter (twice,
-- NULL for all users), cursor time (twice, NULL for the first page), cursor user, cursor id, limit.
SELECT s.user_id, s.id, s.state, s.update_time, u.state AS user_state
FROM sessions s
LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
WHERE s.app_name = ? AND (? IS NULL OR s.user_id = ?)
  AND (? IS NULL OR (s.update_time, s.user_id, s.id) > (?, ?, ?))
ORDER BY s.update_time, s.user_id, s.id
LIMIT ?
