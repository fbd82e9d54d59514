-- How many events a session has, counting no further than ?4: the index's entries alone, so it
-- costs the same for a session of a thousand events as for one of ?4 (a load's size, judged
-- before it runs).
SELECT count(*) FROM (
    SELECT 1 FROM events WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 LIMIT ?4
)
