-- How many sessions of an app (of one user only, when the user is not NULL) are live at the time given (NULL:
-- expiry not judged). Parameters: app, user, time.
SELECT count(*) AS n
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ? AND s.user_id = COALESCE(?, s.user_id)
  AND NOT coalesce(a.expire_time <= ?, FALSE)
