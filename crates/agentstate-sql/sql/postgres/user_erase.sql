-- Erases a user in one statement: the sessions (their events, attributes and snapshots go by
-- cascade), the user's state row, its log of writes and run leases; answers what it removed, counted in the same snapshot.
WITH counted AS (
  SELECT
    (SELECT count(*) FROM events WHERE app_name = $1 AND user_id = $2) AS events,
    (SELECT count(*) FROM user_states, jsonb_object_keys(user_states.state) WHERE app_name = $1 AND user_id = $2) AS user_keys
),
s AS (DELETE FROM sessions WHERE app_name = $1 AND user_id = $2 RETURNING 1),
u AS (DELETE FROM user_states WHERE app_name = $1 AND user_id = $2 RETURNING 1),
l AS (DELETE FROM agentstate_run_leases WHERE app_name = $1 AND user_id = $2 RETURNING 1),
w AS (DELETE FROM agentstate_state_writes WHERE app_name = $1 AND user_id = $2 RETURNING 1)
SELECT (SELECT count(*) FROM s) AS sessions, counted.events, counted.user_keys, (SELECT count(*) FROM u) AS user_rows
FROM counted
