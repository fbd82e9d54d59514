-- Re-encryption rewrites state in place, leaving every update time (the sessions' markers) alone:
-- the app's (?1, ?2), a user's (?1, ?2, ?3), a session's (?1, ?2, ?3, ?4).
UPDATE app_states SET state = ?2 WHERE app_name = ?1;
UPDATE user_states SET state = ?3 WHERE app_name = ?1 AND user_id = ?2;
UPDATE sessions SET state = ?4 WHERE app_name = ?1 AND user_id = ?2 AND id = ?3;
