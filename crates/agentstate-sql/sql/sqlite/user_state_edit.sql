-- The user's state changed in place (/*state*/ is an expression over `state`); no row if missing.
UPDATE user_states SET state = /*state*/, update_time = ?3 WHERE app_name = ?1 AND user_id = ?2
