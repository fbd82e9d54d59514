-- Every artifact of a user in an app, of every session and user-scoped.
DELETE FROM agentstate_artifacts WHERE app_name = $1 AND user_id = $2
