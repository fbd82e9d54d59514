-- Sets a session's expire time ($4, NULL for never), keeping its display name and labels (those
-- of a row left by an earlier session of the same id are not its own and are cleared); nothing
-- for a session expired at $5 (NULL: expiry not judged).
INSERT INTO agentstate_session_attributes AS a
  (app_name, user_id, session_id, session_create_time, display_name, labels, expire_time)
SELECT s.app_name, s.user_id, s.id, s.create_time, NULL, NULL, $4 FROM sessions s
WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
  AND NOT EXISTS (
    SELECT 1 FROM agentstate_session_attributes old
    WHERE old.app_name = $1 AND old.user_id = $2 AND old.session_id = $3
      AND old.session_create_time = s.create_time AND old.expire_time <= $5::timestamp
  )
ON CONFLICT (app_name, user_id, session_id) DO UPDATE SET
  display_name = CASE WHEN a.session_create_time = EXCLUDED.session_create_time THEN a.display_name END,
  labels = CASE WHEN a.session_create_time = EXCLUDED.session_create_time THEN a.labels END,
  session_create_time = EXCLUDED.session_create_time,
  expire_time = EXCLUDED.expire_time
