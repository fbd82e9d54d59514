-- Copies session $3's events up to ($5, $6) into session $4 of the same app and user, as they
-- are, and sets $4's marker to $5, in one statement; nothing if any of them is at or before $7
-- (the copy's marker), which the caller then copies one by one. Answers how many were copied.
WITH early AS (
    SELECT 1 FROM events
    WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND "timestamp" <= $7 AND ("timestamp", id) <= ($5, $6)
    LIMIT 1
),
copied AS (
    INSERT INTO events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
    SELECT id, app_name, user_id, $4, invocation_id, "timestamp", event_data FROM events
    WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND ("timestamp", id) <= ($5, $6)
      AND NOT EXISTS (SELECT 1 FROM early)
    RETURNING 1
),
marked AS (
    UPDATE sessions SET update_time = $5
    WHERE app_name = $1 AND user_id = $2 AND id = $4 AND EXISTS (SELECT 1 FROM copied)
    RETURNING 1
)
SELECT (SELECT count(*) FROM copied) AS copied, EXISTS (SELECT 1 FROM early) AS early,
       (SELECT count(*) FROM marked) AS marked
