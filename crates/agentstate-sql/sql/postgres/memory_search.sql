-- An owner's live memories whose terms match a tsquery ($4; $5 the same, for the rank), best
-- ranked first.
SELECT memory_id, source, create_micros, expire_micros, author, "timestamp", content, custom_metadata
FROM agentstate_memories
WHERE app_name = $1 AND user_id = $2 AND (expire_micros IS NULL OR expire_micros > $3)
    AND terms_vector @@ to_tsquery('simple', $4)
ORDER BY ts_rank(terms_vector, to_tsquery('simple', $5)) DESC, create_micros, source, memory_id
LIMIT $6
