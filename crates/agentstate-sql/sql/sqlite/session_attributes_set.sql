-- Sets a live session's display name (?4, when ?5), labels (?6, when ?7) and expire time (?8,
-- NULL for never, when ?9), keeping what is not set (what a row left by an earlier session of the
-- same id holds is not its own and is cleared); nothing for a session expired at ?10 (NULL:
-- expiry not judged).
INSERT INTO agentstate_session_attributes
  (app_name, user_id, session_id, session_create_time, display_name, labels, expire_time)
SELECT s.app_name, s.user_id, s.id, s.create_time, ?4, ?6, ?8 FROM sessions s
WHERE s.app_name = ?1 AND s.user_id = ?2 AND s.id = ?3
  AND NOT EXISTS (
    SELECT 1 FROM agentstate_session_attributes old
    WHERE old.app_name = ?1 AND old.user_id = ?2 AND old.session_id = ?3
      AND old.session_create_time = s.create_time AND old.expire_time <= ?10
  )
ON CONFLICT (app_name, user_id, session_id) DO UPDATE SET
  display_name = CASE WHEN ?5 THEN excluded.display_name
                      WHEN session_create_time = excluded.session_create_time THEN display_name END,
  labels = CASE WHEN ?7 THEN excluded.labels WHEN session_create_time = excluded.session_create_time THEN labels END,
  expire_time = CASE WHEN ?9 THEN excluded.expire_time
                     WHEN session_create_time = excluded.session_create_time THEN expire_time END,
  session_create_time = excluded.session_create_time
