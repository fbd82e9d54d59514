-- An artifact's versions numbered below the given one (retention; the service never passes one past
-- the latest), the others keeping their numbers.
DELETE FROM agentstate_artifacts WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND name = $4 AND version < $5
