-- (after events_present.sql) The oldest event of invocation $5 in a session.
    (SELECT COALESCE(json_agg(json_build_object('id', w.id, 'invocation_id', w.invocation_id, 'micros', w.micros, 'event_data', w.event_data)), '[]'::json)
     FROM (SELECT id, invocation_id, (extract(epoch FROM "timestamp") * 1000000)::bigint AS micros, event_data
           FROM events
           WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND invocation_id = $5
           ORDER BY "timestamp", id
           LIMIT 1) w) AS events
