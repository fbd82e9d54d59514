-- Removes the session if it expired at or before $4 (events, attributes and snapshots go by
-- cascade): the first step of creating a session again under its id.
DELETE FROM sessions s
USING agentstate_session_attributes a
WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
  AND a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id
  AND a.session_create_time = s.create_time AND a.expire_time <= $4
