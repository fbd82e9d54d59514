-- Sets a live session's display name (the fourth parameter, when the fifth), labels (the sixth,
-- when the seventh) and expire time (the eighth, NULL for never, when the ninth), keeping what is
-- not set (what a row left by an earlier session of the same id holds is not its own and is
-- cleared); nothing for a session expired at the tenth (NULL: expiry not judged). MySQL assigns
-- left to right: the create time goes last.
INSERT INTO agentstate_session_attributes
  (app_name, user_id, session_id, session_create_time, display_name, labels, expire_time)
SELECT s.app_name, s.user_id, s.id, s.create_time, p.new_name, p.new_labels, p.new_expire
FROM (SELECT ? AS app_name, ? AS user_id, ? AS session_id, ? AS new_name, ? AS set_name,
             ? AS new_labels, ? AS set_labels, CAST(? AS DATETIME(6)) AS new_expire, ? AS set_expire,
             CAST(? AS DATETIME(6)) AS now) p
JOIN sessions s ON s.app_name = p.app_name AND s.user_id = p.user_id AND s.id = p.session_id
WHERE NOT EXISTS (
  SELECT 1 FROM agentstate_session_attributes old
  WHERE old.app_name = s.app_name AND old.user_id = s.user_id AND old.session_id = s.id
    AND old.session_create_time = s.create_time AND old.expire_time <= p.now
)
ON DUPLICATE KEY UPDATE
  display_name = IF(p.set_name, VALUES(display_name),
                    IF(session_create_time = VALUES(session_create_time), display_name, NULL)),
  labels = IF(p.set_labels, VALUES(labels), IF(session_create_time = VALUES(session_create_time), labels, NULL)),
  expire_time = IF(p.set_expire, VALUES(expire_time),
                   IF(session_create_time = VALUES(session_create_time), expire_time, NULL)),
  session_create_time = VALUES(session_create_time)
