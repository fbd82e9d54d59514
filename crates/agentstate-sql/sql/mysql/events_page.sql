-- A page of history in storage order after the cursor. Parameters: app, user, session, cursor
-- time (twice, NULL for the first page), cursor id, limit.
SELECT id, invocation_id, `timestamp`, event_data FROM events
WHERE app_name = ? AND user_id = ? AND session_id = ?
  AND (? IS NULL OR (`timestamp`, id) > (?, ?))
ORDER BY `timestamp`, id
LIMIT ?
