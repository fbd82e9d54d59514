-- An artifact's versions numbered below the given one (retention; the service never passes one past
-- the latest), the others keeping their numbers.
DELETE FROM agentstate_artifacts WHERE app_name = ? AND user_id = ? AND session_id = ? AND name = ? AND version < ?
