INSERT OR REPLACE INTO agentstate_session_attributes
  (app_name, user_id, session_id, session_create_time, display_name, labels, expire_time)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
