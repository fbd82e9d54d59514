-- An artifact's versions up to a number, copied into another session of the same user under the
-- same name with their numbers (a fork): the payloads are copied by the database, never sent to
-- the server and back.
INSERT INTO agentstate_artifacts (app_name, user_id, session_id, name, version, create_micros, mime_type, custom_metadata, part, kind, size, data)
SELECT app_name, user_id, $5::VARCHAR, name, version, create_micros, mime_type, custom_metadata, part, kind, size, data
FROM agentstate_artifacts WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND name = $4 AND version <= $6
