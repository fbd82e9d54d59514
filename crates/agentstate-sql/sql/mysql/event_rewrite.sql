-- Rewrites a stored event's data (parameters: app, user, session, event id, data, as PostgreSQL
-- takes them).
UPDATE events e
JOIN (SELECT ? AS app_name, ? AS user_id, ? AS session_id, ? AS id, ? AS event_data) p
  ON e.app_name = p.app_name AND e.user_id = p.user_id AND e.session_id = p.session_id AND e.id = p.id
SET e.event_data = p.event_data
