-- One version of an artifact, whole.
SELECT version, create_micros, mime_type, custom_metadata, part, kind, size, data FROM agentstate_artifacts
WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND name = ?4 AND version = ?5
