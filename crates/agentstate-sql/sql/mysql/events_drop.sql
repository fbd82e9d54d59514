DELETE FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? AND timestamp < ?;
DELETE FROM agentstate_state_snapshots WHERE app_name = ? AND user_id = ? AND session_id = ? AND at_micros < ?;
