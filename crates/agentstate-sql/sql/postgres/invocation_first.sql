-- The oldest event of invocation $4 in a session, and whether the session exists and has not
-- expired at $5 (NULL: expiry not judged).
SELECT
    EXISTS (SELECT 1 FROM sessions s
            LEFT JOIN agentstate_session_attributes a
              ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id
             AND a.session_create_time = s.create_time
            WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
              AND NOT coalesce(a.expire_time <= $5::timestamp, false)) AS present,
    (SELECT COALESCE(json_agg(json_build_object('id', w.id, 'invocation_id', w.invocation_id, 'micros', w.micros, 'event_data', w.event_data)), '[]'::json)
     FROM (SELECT id, invocation_id, (extract(epoch FROM "timestamp") * 1000000)::bigint AS micros, event_data
           FROM events
           WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND invocation_id = $4
           ORDER BY "timestamp", id
           LIMIT 1) w) AS events
