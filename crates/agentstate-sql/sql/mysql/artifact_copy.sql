-- An artifact's versions up to a number, copied into another session of the same user under the
-- same name with their numbers (a fork): the payloads are copied by the database, never sent to
-- the server and back. The parameters come first in a derived table, so they bind in the other
-- dialects' order (source key, new session, last number).
INSERT INTO agentstate_artifacts (app_name, user_id, session_id, name, version, create_micros, mime_type, custom_metadata, part, kind, size, data)
SELECT a.app_name, a.user_id, p.to_session, a.name, a.version, a.create_micros, a.mime_type, a.custom_metadata, a.part, a.kind, a.size, a.data
FROM (SELECT ? AS app, ? AS usr, ? AS sess, ? AS nm, ? AS to_session, ? AS last_version) p
JOIN agentstate_artifacts a ON a.app_name = p.app AND a.user_id = p.usr AND a.session_id = p.sess AND a.name = p.nm AND a.version <= p.last_version
