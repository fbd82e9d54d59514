-- Rewrites a memory its source holds, in place (keeping its create time); one it does not hold
-- is left out.
UPDATE agentstate_memories SET
    expire_micros = $1, author = $2, "timestamp" = $3, content = $4, custom_metadata = $5, terms = $6
WHERE app_name = $7 AND user_id = $8 AND source = $9 AND memory_id = $10
