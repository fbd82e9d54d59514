-- The event $4 of a session, and whether the session exists and has not expired at $5 (NULL:
-- expiry not judged). The lookup leads with `id`, the primary key's first column.
SELECT
    EXISTS (SELECT 1 FROM sessions s
            LEFT JOIN agentstate_session_attributes a
              ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id
             AND a.session_create_time = s.create_time
            WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
              AND NOT coalesce(a.expire_time <= $5::timestamp, false)) AS present,
    (SELECT COALESCE(json_agg(json_build_object('id', id, 'invocation_id', invocation_id, 'micros', (extract(epoch FROM "timestamp") * 1000000)::bigint, 'event_data', event_data)), '[]'::json)
     FROM events
     WHERE id = $4 AND app_name = $1 COLLATE "C" AND user_id = $2 COLLATE "C" AND session_id = $3 COLLATE "C") AS events
