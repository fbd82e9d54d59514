-- Asks the holder of a live run lease (not lapsed at the time bound last) to stop: it sees the
-- count go up on its next renewal. A count, so the statement always changes the row it finds.
UPDATE agentstate_run_leases SET interrupts = interrupts + 1
WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND until_micros > $4
