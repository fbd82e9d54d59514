-- Owners holding memories after (?1, ?2), in (app, user) order; at most ?3.
SELECT DISTINCT app_name, user_id FROM agentstate_memories
WHERE app_name > ?1 OR (app_name = ?1 AND user_id > ?2)
ORDER BY app_name, user_id
LIMIT ?3
