-- One version's metadata of an artifact (no payload): the version given, or the newest for NULL.
SELECT version, create_micros, mime_type, custom_metadata, size FROM agentstate_artifacts
WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND name = $4 AND version = COALESCE($5::bigint, version)
ORDER BY version DESC LIMIT 1
