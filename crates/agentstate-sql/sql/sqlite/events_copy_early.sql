-- Whether session ?3 has events up to (?5, ?6) at or before time ?4 (they cannot be copied as they are).
SELECT EXISTS (
    SELECT 1 FROM events
    WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND timestamp <= ?4
      AND (timestamp < ?5 OR (timestamp = ?5 AND id <= ?6))
)
