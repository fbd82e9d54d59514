-- Rewrites a memory its source holds, in place (keeping its create time); one it does not hold
-- is left out.
UPDATE agentstate_memories SET
  expire_micros = ?, author = ?, `timestamp` = ?, content = ?, custom_metadata = ?, terms = ?
WHERE app_name = ? AND user_id = ? AND source = ? AND memory_id = ?
