-- Takes or renews a run lease (?1 app, ?2 user, ?3 session, ?4 holder, ?5 until, ?6 now): a
-- new row, or the row taken over when it is the holder's or lapsed at ?6. A holder renewing
-- keeps the interruptions asked of it; a new holder starts with none. Who holds it after is read
-- by lease_get.sql.
INSERT INTO agentstate_run_leases (app_name, user_id, session_id, holder, until_micros, interrupts)
VALUES (?1, ?2, ?3, ?4, ?5, 0)
ON CONFLICT (app_name, user_id, session_id) DO UPDATE SET
	interrupts = CASE WHEN holder = excluded.holder THEN interrupts ELSE 0 END,
	holder = excluded.holder,
	until_micros = excluded.until_micros
WHERE holder = excluded.holder OR until_micros <= ?6
