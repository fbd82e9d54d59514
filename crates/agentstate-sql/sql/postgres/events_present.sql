-- The head of every read of a session's events (events_page, event_get, invocation_first, each
-- appended to this): whether the session exists and has not expired at $4 (NULL: expiry not
-- judged), read in the same statement as the events.
SELECT
    EXISTS (SELECT 1 FROM sessions s
            LEFT JOIN agentstate_session_attributes a
              ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id
             AND a.session_create_time = s.create_time
            WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
              AND NOT coalesce(a.expire_time <= $4::timestamp, false)) AS present,
