-- Owners holding memories after ($1, $2), in (app, user) order; at most $3.
SELECT DISTINCT app_name, user_id FROM agentstate_memories
WHERE (app_name, user_id) > ($1, $2)
ORDER BY app_name, user_id
LIMIT $3
