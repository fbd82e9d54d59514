-- Retention: a session's events older than the cut (?4, stored text), then its history
-- snapshots before it (?4, in µs). The boundary snapshot is written next.
DELETE FROM events WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND timestamp < ?4;
DELETE FROM agentstate_state_snapshots WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND at_micros < ?4;
