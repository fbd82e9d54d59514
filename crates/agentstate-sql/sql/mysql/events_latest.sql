-- A page of history backwards: the newest events before the cursor and at or after a time,
-- answered oldest first. Parameters: app, user, session, cursor time (twice, NULL for the newest
-- page), cursor id, lower time bound (twice, NULL for none), limit.
SELECT id, invocation_id, `timestamp`, event_data FROM (
    SELECT id, invocation_id, `timestamp`, event_data FROM events
    WHERE app_name = ? AND user_id = ? AND session_id = ?
      AND (? IS NULL OR (`timestamp`, id) < (?, ?))
      AND (? IS NULL OR `timestamp` >= ?)
    ORDER BY `timestamp` DESC, id DESC
    LIMIT ?) newest
ORDER BY `timestamp`, id
