INSERT INTO agentstate_session_attributes
  (app_name, user_id, session_id, session_create_time, display_name, labels, expire_time)
SELECT app_name, user_id, id, create_time, NULL, NULL, ? FROM sessions
WHERE app_name = ? AND user_id = ? AND id = ?
ON DUPLICATE KEY UPDATE
  display_name = IF(session_create_time = VALUES(session_create_time), display_name, NULL),
  labels = IF(session_create_time = VALUES(session_create_time), labels, NULL),
  expire_time = VALUES(expire_time),
  session_create_time = VALUES(session_create_time)
