-- A page of history backwards: the newest ?6 events before the cursor (?4, ?5; U+10FFFF and ''
-- for the newest page), at or after ?7 ('' for no bound), answered oldest first.
SELECT id, invocation_id, timestamp, event_data FROM (
    SELECT id, invocation_id, timestamp, event_data FROM events
    WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND (timestamp, id) < (?4, ?5) AND timestamp >= ?7
    ORDER BY timestamp DESC, id DESC
    LIMIT ?6)
ORDER BY timestamp, id
