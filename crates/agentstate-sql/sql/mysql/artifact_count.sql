-- How many artifact versions a user has in an app (what erasing the user removes).
SELECT COUNT(*) AS versions FROM agentstate_artifacts WHERE app_name = ? AND user_id = ?
