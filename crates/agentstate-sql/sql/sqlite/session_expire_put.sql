-- Sets a session's expire time (?4, NULL for never), keeping its display name and labels (those
-- of a row left by an earlier session of the same id are not its own and are cleared).
INSERT INTO agentstate_session_attributes
  (app_name, user_id, session_id, session_create_time, display_name, labels, expire_time)
SELECT app_name, user_id, id, create_time, NULL, NULL, ?4 FROM sessions
WHERE app_name = ?1 AND user_id = ?2 AND id = ?3
ON CONFLICT (app_name, user_id, session_id) DO UPDATE SET
  display_name = CASE WHEN session_create_time = excluded.session_create_time THEN display_name END,
  labels = CASE WHEN session_create_time = excluded.session_create_time THEN labels END,
  session_create_time = excluded.session_create_time,
  expire_time = excluded.expire_time
