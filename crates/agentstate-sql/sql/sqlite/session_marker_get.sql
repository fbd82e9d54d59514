-- A session's marker and expire time, after an append found it changed (or expired).
SELECT s.update_time, a.expire_time FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ?1 AND s.user_id = ?2 AND s.id = ?3
