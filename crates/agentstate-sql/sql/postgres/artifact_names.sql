-- The names of a session's artifacts and of the user's user-scoped ones (session ''), sorted.
SELECT DISTINCT name FROM agentstate_artifacts
WHERE app_name = $1 AND user_id = $2 AND (session_id = $3 OR session_id = '')
ORDER BY name
