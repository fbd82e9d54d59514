-- Owners holding memories after (app, user), in (app, user) order; then the limit.
SELECT DISTINCT app_name, user_id FROM agentstate_memories
WHERE (app_name, user_id) > (?, ?)
ORDER BY app_name, user_id
LIMIT ?
