-- The newest history snapshot of a session at or before $4 (epoch µs), if its session is the one
-- that wrote it (same create_time).
SELECT s.at_micros, s.at_event_id, s.state::text AS state
FROM agentstate_state_snapshots s
JOIN sessions x ON x.app_name = s.app_name AND x.user_id = s.user_id AND x.id = s.session_id
    AND x.create_time = s.session_create_time
WHERE s.app_name = $1 AND s.user_id = $2 AND s.session_id = $3 AND s.at_micros <= $4
ORDER BY s.at_micros DESC, s.at_event_id DESC
LIMIT 1
