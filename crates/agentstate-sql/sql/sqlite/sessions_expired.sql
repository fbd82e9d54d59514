-- Sessions whose expire time is at or before ?1, oldest expiry first, at most ?2 (served by
-- idx_agentstate_attributes_expire); attribute rows left by a deleted session are not theirs.
SELECT a.app_name, a.user_id, a.session_id
FROM agentstate_session_attributes a
JOIN sessions s ON s.app_name = a.app_name AND s.user_id = a.user_id AND s.id = a.session_id
  AND s.create_time = a.session_create_time
WHERE a.expire_time IS NOT NULL AND a.expire_time <= ?1
ORDER BY a.expire_time
LIMIT ?2
