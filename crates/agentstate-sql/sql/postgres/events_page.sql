-- (after events_present.sql) A page of history in storage order after the cursor ($5, $6; $5 NULL
-- for the first page) and at or after $8 (NULL for no bound), at most $7 events. The bounds are
-- COALESCEd rather than `$5 IS NULL OR …`: the generic plan PostgreSQL caches for a prepared
-- statement cannot use the index for an OR on a parameter (a 10,000-event session: 7.7 ms instead
-- of 0.1 ms per page).
    (SELECT COALESCE(json_agg(json_build_object('id', w.id, 'invocation_id', w.invocation_id, 'micros', w.micros, 'event_data', w.event_data) ORDER BY w.ts, w.id), '[]'::json)
     FROM (SELECT id, invocation_id, "timestamp" AS ts, (extract(epoch FROM "timestamp") * 1000000)::bigint AS micros, event_data
           FROM events
           WHERE app_name = $1 AND user_id = $2 AND session_id = $3
             AND ("timestamp", id) > (COALESCE($5::timestamp, '-infinity'::timestamp), $6::varchar)
             AND "timestamp" >= COALESCE($8::timestamp, '-infinity'::timestamp)
           ORDER BY "timestamp", id
           LIMIT $7) w) AS events
