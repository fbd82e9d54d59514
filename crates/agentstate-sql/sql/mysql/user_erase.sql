DELETE FROM events WHERE app_name = ? AND user_id = ?;
DELETE FROM sessions WHERE app_name = ? AND user_id = ?;
DELETE FROM user_states WHERE app_name = ? AND user_id = ?;
DELETE FROM agentstate_run_leases WHERE app_name = ? AND user_id = ?;
DELETE FROM agentstate_state_writes WHERE app_name = ? AND user_id = ?;
