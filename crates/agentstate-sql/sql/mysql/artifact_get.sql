-- One version of an artifact, whole.
SELECT version, create_micros, mime_type, custom_metadata, part, kind, size, data FROM agentstate_artifacts
WHERE app_name = ? AND user_id = ? AND session_id = ? AND name = ? AND version = ?
