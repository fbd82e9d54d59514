SELECT EXISTS (
    SELECT 1 FROM events
    WHERE app_name = ? AND user_id = ? AND session_id = ? AND `timestamp` <= ?
      AND (`timestamp` < ? OR (`timestamp` = ? AND id <= ?))
) AS early
