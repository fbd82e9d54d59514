-- (after events_present.sql) A page of history backwards: the newest $7 events before the cursor
-- ($5, $6; $5 NULL for the newest page) and at or after $8 (NULL for no bound), answered oldest
-- first. The bounds are COALESCEd, as in events_page.sql, so the cached plan uses the index.
    (SELECT COALESCE(json_agg(json_build_object('id', w.id, 'invocation_id', w.invocation_id, 'micros', w.micros, 'event_data', w.event_data) ORDER BY w.ts, w.id), '[]'::json)
     FROM (SELECT id, invocation_id, "timestamp" AS ts, (extract(epoch FROM "timestamp") * 1000000)::bigint AS micros, event_data
           FROM events
           WHERE app_name = $1 AND user_id = $2 AND session_id = $3
             AND ("timestamp", id) < (COALESCE($5::timestamp, 'infinity'::timestamp), $6::varchar)
             AND "timestamp" >= COALESCE($8::timestamp, '-infinity'::timestamp)
           ORDER BY "timestamp" DESC, id DESC
           LIMIT $7) w) AS events
