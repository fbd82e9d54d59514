-- More of a large state change, after session_commit.
UPDATE sessions SET state = /*state*/ WHERE app_name = ?1 AND user_id = ?2 AND id = ?3
