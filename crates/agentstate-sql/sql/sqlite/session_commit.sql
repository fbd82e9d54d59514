-- Moves the session's marker from ?5 to ?4 and changes its state (/*state*/ becomes
-- `state = <expression>,` or nothing); no row when the session is missing or the marker moved.
UPDATE sessions SET /*state*/ update_time = ?4
WHERE app_name = ?1 AND user_id = ?2 AND id = ?3 AND update_time = ?5
