-- The session's state, marker and expire time, its rows locked until the append's transaction
-- ends.
SELECT s.state, s.update_time, a.expire_time FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?
FOR UPDATE
