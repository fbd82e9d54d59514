-- Every event's kept facts, in no order, each row with the session's event count: when every
-- event has them, they are the view's input; otherwise events_facts.sql reads the text of those
-- without.
SELECT event_id::text AS event_id, invocation_id::text AS invocation_id, micros, facts,
       (SELECT count(*) FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3) AS events
FROM agentstate_event_facts WHERE app_name = $1 AND user_id = $2 AND session_id = $3
