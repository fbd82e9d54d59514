-- Every event of a session, oldest first: its columns, its facts where they were kept, its text
-- where they were not.
SELECT e.id::text AS id, e.invocation_id::text AS invocation_id, e."timestamp" AS event_time, f.facts,
       CASE WHEN f.facts IS NULL THEN e.event_data::text END AS event_data
FROM events e LEFT JOIN agentstate_event_facts f
  ON f.app_name = e.app_name AND f.user_id = e.user_id AND f.session_id = e.session_id AND f.event_id = e.id
WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
ORDER BY e."timestamp", e.id
