-- The events of a session with these ids (?4, a JSON array), oldest first: a primary-key lookup
-- per id.
SELECT e.id, e.invocation_id, e.timestamp, e.event_data FROM json_each(?4) j
CROSS JOIN events e ON e.id = j.value AND e.app_name = ?1 AND e.user_id = ?2 AND e.session_id = ?3
ORDER BY e.timestamp, e.id
