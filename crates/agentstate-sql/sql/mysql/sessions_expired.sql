-- Sessions whose expire time is at or before ?, oldest expiry first, at most ? (served by
-- idx_agentstate_attributes_expire), locked until the sweep's transaction deletes them.
SELECT a.app_name, a.user_id, a.session_id
FROM agentstate_session_attributes a
JOIN sessions s ON s.app_name = a.app_name AND s.user_id = a.user_id AND s.id = a.session_id
  AND s.create_time = a.session_create_time
WHERE a.expire_time IS NOT NULL AND a.expire_time <= ?
ORDER BY a.expire_time
LIMIT ?
FOR UPDATE
