-- Who holds a session's run lease, until when, and how many interruptions were asked of it.
SELECT holder, until_micros, interrupts FROM agentstate_run_leases
WHERE app_name = $1 AND user_id = $2 AND session_id = $3
