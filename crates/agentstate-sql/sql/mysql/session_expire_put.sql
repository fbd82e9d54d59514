-- Sets a session's expire time (the fourth parameter, NULL for never), keeping its display name
-- and labels (those of a row left by an earlier session of the same id are not its own and are
-- cleared); nothing for a session expired at the fifth (NULL: expiry not judged).
INSERT INTO agentstate_session_attributes
  (app_name, user_id, session_id, session_create_time, display_name, labels, expire_time)
SELECT s.app_name, s.user_id, s.id, s.create_time, NULL, NULL, p.expire_time
FROM (SELECT ? AS app_name, ? AS user_id, ? AS session_id,
             CAST(? AS DATETIME(6)) AS expire_time, CAST(? AS DATETIME(6)) AS now) p
JOIN sessions s ON s.app_name = p.app_name AND s.user_id = p.user_id AND s.id = p.session_id
WHERE NOT EXISTS (
  SELECT 1 FROM agentstate_session_attributes old
  WHERE old.app_name = s.app_name AND old.user_id = s.user_id AND old.session_id = s.id
    AND old.session_create_time = s.create_time AND old.expire_time <= p.now
)
ON DUPLICATE KEY UPDATE
  display_name = IF(session_create_time = VALUES(session_create_time), display_name, NULL),
  labels = IF(session_create_time = VALUES(session_create_time), labels, NULL),
  expire_time = VALUES(expire_time),
  session_create_time = VALUES(session_create_time)
