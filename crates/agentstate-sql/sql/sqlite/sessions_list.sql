-- Every user's sessions of an app, in keyset pages in the order (update_time, user_id, id); ?2..?4
-- is the cursor ('', '', '' for the first page), ?5 the limit (-1: none).
SELECT user_id, id, state, update_time FROM sessions
WHERE app_name = ?1 AND (update_time, user_id, id) > (?2, ?3, ?4)
ORDER BY update_time, user_id, id
LIMIT ?5
