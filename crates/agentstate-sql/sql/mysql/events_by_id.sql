-- The events of a session with these ids (the compacted view's), in any order: the statement is
-- completed with one placeholder per id, `?, ?, …)`, by the caller.
SELECT id, invocation_id, `timestamp`, event_data FROM events
WHERE app_name = ? AND user_id = ? AND session_id = ? AND id IN (