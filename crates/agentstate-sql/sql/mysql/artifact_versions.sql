-- Every version's metadata of an artifact, oldest first (no payloads).
SELECT version, create_micros, mime_type, custom_metadata, size FROM agentstate_artifacts
WHERE app_name = ? AND user_id = ? AND session_id = ? AND name = ?
ORDER BY version
