-- A version of an artifact, under the number artifact_next read (a concurrent save that took it
-- first makes this one fail on the key, and the save reads the next number again).
INSERT INTO agentstate_artifacts (app_name, user_id, session_id, name, version, create_micros, mime_type, custom_metadata, part, kind, size, data)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
