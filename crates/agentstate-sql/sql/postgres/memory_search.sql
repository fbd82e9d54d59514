-- An owner's live memories whose terms match a tsquery ($4; $5 the same, for the rank), best
-- ranked first. The match runs first, alone, on the GIN index (terms are salted per owner, so it
-- finds that owner's memories); the owner and expiry are checked on its hits.
WITH hits AS MATERIALIZED (
    SELECT app_name, user_id, memory_id, source, create_micros, expire_micros, author, "timestamp", content,
        custom_metadata, ts_rank(terms_vector, to_tsquery('simple', $5)) AS rank
    FROM agentstate_memories
    WHERE terms_vector @@ to_tsquery('simple', $4)
)
SELECT memory_id, source, create_micros, expire_micros, author, "timestamp", content, custom_metadata
FROM hits
WHERE app_name = $1 AND user_id = $2 AND (expire_micros IS NULL OR expire_micros > $3)
ORDER BY rank DESC, create_micros, source, memory_id
LIMIT $6
