-- The names of a session's artifacts and of the user's user-scoped ones (session ''), sorted.
SELECT DISTINCT name FROM agentstate_artifacts
WHERE app_name = ? AND user_id = ? AND (session_id = ? OR session_id = '')
ORDER BY name
