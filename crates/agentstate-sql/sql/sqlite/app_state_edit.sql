-- The app's state changed in place (/*state*/ is an expression over `state`); no row if missing.
UPDATE app_states SET state = /*state*/, update_time = ?2 WHERE app_name = ?1
