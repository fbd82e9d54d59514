SELECT id, invocation_id, (extract(epoch FROM "timestamp") * 1000000)::bigint AS micros, event_data
FROM events
WHERE id = $4 AND app_name = $1 COLLATE "C" AND user_id = $2 COLLATE "C" AND session_id = $3 COLLATE "C"
