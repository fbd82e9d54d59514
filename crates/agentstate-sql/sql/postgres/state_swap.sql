-- Replaces one stored state value ($4 key) with $6 only if it is still $5, leaving update times
-- (the sessions' markers) alone: of the app ($2, $3 NULL), a user ($3 NULL) or a session.
WITH a AS (
  UPDATE app_states SET state = jsonb_set(state, ARRAY[$4::text], $6::jsonb)
  WHERE app_name = $1 AND $2::text IS NULL AND $3::text IS NULL AND state -> $4::text = $5::jsonb RETURNING 1
), u AS (
  UPDATE user_states SET state = jsonb_set(state, ARRAY[$4::text], $6::jsonb)
  WHERE app_name = $1 AND user_id = $2 AND $3::text IS NULL AND state -> $4::text = $5::jsonb RETURNING 1
), s AS (
  UPDATE sessions SET state = jsonb_set(state, ARRAY[$4::text], $6::jsonb)
  WHERE app_name = $1 AND user_id = $2 AND id = $3 AND state -> $4::text = $5::jsonb RETURNING 1
)
SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM u) + (SELECT count(*) FROM s) AS swapped
