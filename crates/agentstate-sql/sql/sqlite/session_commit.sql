-- Moves the session's marker from ?5 to ?4 and changes its state (/*state*/ becomes
-- `state = <expression>,` or nothing); no row when the session is missing, expired at ?6 (NULL:
-- expiry not judged) or the marker moved.
UPDATE sessions SET /*state*/ update_time = ?4
WHERE app_name = ?1 AND user_id = ?2 AND id = ?3 AND update_time = ?5
  AND NOT EXISTS (
    SELECT 1 FROM agentstate_session_attributes a
    WHERE a.app_name = ?1 AND a.user_id = ?2 AND a.session_id = ?3 AND a.session_create_time = sessions.create_time
      AND a.expire_time <= ?6
  )
