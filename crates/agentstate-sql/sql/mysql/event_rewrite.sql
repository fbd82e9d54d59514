-- Rewrites a stored event's data (parameters: app, user, session, event id, data, as PostgreSQL
-- takes them); its facts, of the old data, are emptied (the view then reads the text).
UPDATE events e
JOIN (SELECT ? AS app_name, ? AS user_id, ? AS session_id, ? AS id, ? AS event_data) p
  ON e.app_name = p.app_name AND e.user_id = p.user_id AND e.session_id = p.session_id AND e.id = p.id
LEFT JOIN agentstate_event_facts f
  ON f.app_name = e.app_name AND f.user_id = e.user_id AND f.session_id = e.session_id AND f.event_id = e.id
SET e.event_data = p.event_data, f.facts = ''
