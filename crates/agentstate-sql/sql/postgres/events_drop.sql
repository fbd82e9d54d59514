-- Retention, in one statement: drops a session's events older than $4, its history snapshots
-- before it, and keeps the boundary snapshot ($5 at ($6, '')); answers how many events went.
WITH s AS (
  SELECT create_time FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3
),
e AS (
  DELETE FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND timestamp < $4 RETURNING 1
),
h AS (
  DELETE FROM agentstate_state_snapshots
  WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND at_micros < $7
    AND NOT (at_micros = $6 AND at_event_id = '')
),
b AS (
  INSERT INTO agentstate_state_snapshots (app_name, user_id, session_id, session_create_time, at_micros, at_event_id, state)
  SELECT $1, $2, $3, s.create_time, $6, '', $5::jsonb FROM s
  ON CONFLICT (app_name, user_id, session_id, at_micros, at_event_id) DO UPDATE SET state = excluded.state
)
SELECT count(*) AS dropped FROM e
