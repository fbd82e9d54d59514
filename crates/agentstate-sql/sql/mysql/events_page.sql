-- A page of history in storage order after the cursor and at or after a time. Parameters: app,
-- user, session, cursor time (twice, NULL for the first page), cursor id, lower time bound (twice,
-- NULL for none), limit.
SELECT id, invocation_id, `timestamp`, event_data FROM events
WHERE app_name = ? AND user_id = ? AND session_id = ?
  AND (? IS NULL OR (`timestamp`, id) > (?, ?))
  AND (? IS NULL OR `timestamp` >= ?)
ORDER BY `timestamp`, id
LIMIT ?
