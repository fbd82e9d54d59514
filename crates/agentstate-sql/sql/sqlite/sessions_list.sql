-- A page of sessions in keyset pages in the order ({at}, user_id, id): a template (see src/list.rs),
-- {at} the order's column, {user} `s.user_id = ?6` or `?6 IS NULL` (every user; each its own
-- statement, as SQLite plans a statement once). ?2..?4 is the cursor ('', '', '' for the first
-- page), ?5 the limit (-1: none); those expired at ?7 left out (NULL: expiry not judged); ?8..?11
-- bound the update and create times ('' and '~' when open); ?12 is the display name (NULL: any).
-- Labels and state values are checked by the service.
SELECT s.user_id, s.id, s.state, s.update_time, s.create_time, a.display_name, a.labels, a.expire_time
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ?1 AND {user}
  AND (s.{at}, s.user_id, s.id) > (?2, ?3, ?4)
  AND NOT coalesce(a.expire_time <= ?7, FALSE)
  AND s.update_time BETWEEN ?8 AND ?9 AND s.create_time BETWEEN ?10 AND ?11
  AND (?12 IS NULL OR a.display_name = ?12)
ORDER BY s.{at}, s.user_id, s.id
LIMIT ?5
