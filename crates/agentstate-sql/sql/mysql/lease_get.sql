-- Who holds a session's run lease, until when, and how many interruptions were asked of it.
SELECT holder, until_micros, interrupts FROM agentstate_run_leases
WHERE app_name = ? AND user_id = ? AND session_id = ?
