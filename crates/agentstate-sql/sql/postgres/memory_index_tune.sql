-- The memory search index without a pending list (`fastupdate`), so a search never scans entries
-- not merged yet (they made a search of a freshly written user's memories ten times slower). The
-- schema creates it that way; this sets it on an index made before, once.
DO $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM pg_class
        WHERE oid = to_regclass('idx_agentstate_memories_terms')
          AND NOT coalesce(reloptions, '{}') @> ARRAY['fastupdate=off']
    ) THEN
        ALTER INDEX idx_agentstate_memories_terms SET (fastupdate = off);
    END IF;
END
$$;
