-- One version's metadata of an artifact (no payload): the version given, or the newest for NULL.
SELECT version, create_micros, mime_type, custom_metadata, size FROM agentstate_artifacts
WHERE app_name = ? AND user_id = ? AND session_id = ? AND name = ? AND version = COALESCE(?, version)
ORDER BY version DESC LIMIT 1
