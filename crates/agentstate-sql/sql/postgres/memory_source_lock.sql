-- The row of an owner's source, created if missing: a write locks it first, so writes of one
-- source take turns.
INSERT INTO agentstate_memory_sources (app_name, user_id, source) VALUES ($1, $2, $3)
ON CONFLICT (app_name, user_id, source) DO UPDATE SET source = excluded.source
