-- Every event's kept facts, in no order, each row with the session's event count: when every
-- event has them, they are the view's input; otherwise events_facts.sql reads the text of those
-- without.
-- (Parameters: app, user, session, twice.)
SELECT event_id, invocation_id, micros, facts,
       (SELECT count(*) FROM events WHERE app_name = ? AND user_id = ? AND session_id = ?) AS events
FROM agentstate_event_facts WHERE app_name = ? AND user_id = ? AND session_id = ?
