-- (after events_present.sql) The event $5 of a session. The lookup leads with `id`, the primary
-- key's first column.
    (SELECT COALESCE(json_agg(json_build_object('id', id, 'invocation_id', invocation_id, 'micros', (extract(epoch FROM "timestamp") * 1000000)::bigint, 'event_data', event_data)), '[]'::json)
     FROM events
     WHERE id = $5 AND app_name = $1 COLLATE "C" AND user_id = $2 COLLATE "C" AND session_id = $3 COLLATE "C") AS events
