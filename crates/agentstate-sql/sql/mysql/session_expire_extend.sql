-- The refresh-on-append policy: an expiring session's expire time moves to the first parameter
-- if that is later (parameters: time, app, user, session, time).
UPDATE agentstate_session_attributes a
JOIN sessions s ON s.app_name = a.app_name AND s.user_id = a.user_id AND s.id = a.session_id
  AND s.create_time = a.session_create_time
SET a.expire_time = ?
WHERE a.app_name = ? AND a.user_id = ? AND a.session_id = ? AND a.expire_time < ?
