-- How many sessions of app ?1 (of user ?2 only, when not NULL) are live at ?3 (NULL: expiry not judged).
SELECT count(*)
FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
WHERE s.app_name = ?1 AND s.user_id = coalesce(?2, s.user_id)
  AND NOT coalesce(a.expire_time <= ?3, FALSE)
