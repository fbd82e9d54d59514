-- A page of history in storage order after the cursor (?4, ?5: '' and '' for the first page),
-- at or after ?7 ('' for no bound).
SELECT id, invocation_id, timestamp, event_data FROM events
WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND (timestamp, id) > (?4, ?5) AND timestamp >= ?7
ORDER BY timestamp, id
LIMIT ?6
