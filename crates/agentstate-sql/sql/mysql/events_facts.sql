-- Every event of a session, oldest first: its columns, its facts where they were kept, its text
-- where they were not (or were emptied by a rewrite).
SELECT e.id, e.invocation_id, e.`timestamp`, f.facts,
       CASE WHEN f.facts IS NULL OR f.facts = '' THEN e.event_data END AS event_data
FROM events e LEFT JOIN agentstate_event_facts f
  ON f.app_name = e.app_name AND f.user_id = e.user_id AND f.session_id = e.session_id AND f.event_id = e.id
WHERE e.app_name = ? AND e.user_id = ? AND e.session_id = ?
ORDER BY e.`timestamp`, e.id
