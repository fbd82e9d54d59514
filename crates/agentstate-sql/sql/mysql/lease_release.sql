-- Gives a run lease back: only its holder can.
DELETE FROM agentstate_run_leases WHERE app_name = ? AND user_id = ? AND session_id = ? AND holder = ?
