DELETE FROM events WHERE app_name = ?1 AND user_id = ?2;
DELETE FROM agentstate_session_attributes WHERE app_name = ?1 AND user_id = ?2;
DELETE FROM agentstate_state_snapshots WHERE app_name = ?1 AND user_id = ?2;
DELETE FROM sessions WHERE app_name = ?1 AND user_id = ?2;
DELETE FROM user_states WHERE app_name = ?1 AND user_id = ?2;
DELETE FROM agentstate_run_leases WHERE app_name = ?1 AND user_id = ?2;
DELETE FROM agentstate_state_writes WHERE app_name = ?1 AND user_id = ?2;
