-- Removes the session if it expired at or before the fourth parameter (events, attributes and
-- snapshots go by cascade): the first step of creating a session again under its id.
DELETE s FROM sessions s
JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ? AND s.user_id = ? AND s.id = ? AND a.expire_time <= ?
