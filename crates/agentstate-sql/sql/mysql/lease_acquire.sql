-- Takes or renews a run lease (app, user, session, holder, until, now): a new row, or the row
-- taken over when it is the holder's or lapsed at `now`. A holder renewing keeps the
-- interruptions asked of it; a new holder starts with none. Who holds it after is read by
-- lease_get.sql. MySQL assigns left to right, each assignment seeing the ones before: a lapsed
-- lease is first marked (until -1), which the later ones test, so `now` is bound once.
INSERT INTO agentstate_run_leases (app_name, user_id, session_id, holder, until_micros, interrupts)
VALUES (?, ?, ?, ?, ?, 0)
ON DUPLICATE KEY UPDATE
  until_micros = IF(until_micros <= ?, -1, until_micros),
  interrupts = IF(holder = VALUES(holder) OR until_micros <> -1, interrupts, 0),
  holder = IF(holder = VALUES(holder) OR until_micros = -1, VALUES(holder), holder),
  until_micros = IF(holder = VALUES(holder), VALUES(until_micros), until_micros)
