-- One user's sessions (?6), as sessions_list.sql; a statement of its own so that SQLite, which
-- plans a statement once, looks up the user's rows by the primary key.
SELECT user_id, id, state, update_time FROM sessions
WHERE app_name = ?1 AND user_id = ?6 AND (update_time, user_id, id) > (?2, ?3, ?4)
ORDER BY update_time, user_id, id
LIMIT ?5
