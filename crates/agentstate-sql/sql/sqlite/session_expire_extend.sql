-- The refresh-on-append policy: an expiring session's expire time moves to ?4 if that is later.
UPDATE agentstate_session_attributes SET expire_time = ?4
WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND expire_time IS NOT NULL AND expire_time < ?4
  AND session_create_time = (SELECT create_time FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND id = ?3)
