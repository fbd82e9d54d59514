-- Gives a run lease back: only its holder can.
DELETE FROM agentstate_run_leases WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND holder = ?4
