-- Re-encryption rewrites state in place, leaving every update time (the sessions' markers) alone.
UPDATE app_states SET state = ? WHERE app_name = ?;
UPDATE user_states SET state = ? WHERE app_name = ? AND user_id = ?;
UPDATE sessions SET state = ? WHERE app_name = ? AND user_id = ? AND id = ?;
