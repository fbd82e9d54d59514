-- Takes or renews a run lease ($1 app, $2 user, $3 session, $4 holder, $5 until, $6 now), and
-- answers who holds it after, in one round trip: a new row, or the row taken over when it is the
-- holder's or lapsed at $6, returned; else the row as it was (the holder). A holder renewing keeps
-- the interruptions asked of it; a new holder starts with none. No row at all when a concurrent
-- run released it in between (the statement's snapshot predates that): lease_get.sql then reads it.
WITH taken AS (
    INSERT INTO agentstate_run_leases AS l (app_name, user_id, session_id, holder, until_micros, interrupts)
    VALUES ($1, $2, $3, $4, $5, 0)
    ON CONFLICT (app_name, user_id, session_id) DO UPDATE SET
        interrupts = CASE WHEN l.holder = excluded.holder THEN l.interrupts ELSE 0 END,
        holder = excluded.holder,
        until_micros = excluded.until_micros
    WHERE l.holder = excluded.holder OR l.until_micros <= $6
    RETURNING holder, until_micros, interrupts
)
SELECT holder, until_micros, interrupts FROM taken
UNION ALL
SELECT holder, until_micros, interrupts FROM agentstate_run_leases
WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND NOT EXISTS (SELECT 1 FROM taken)
