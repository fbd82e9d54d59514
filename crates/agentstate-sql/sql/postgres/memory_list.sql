-- A page of an owner's live memories after a position (create time, source, id).
SELECT memory_id, source, create_micros, expire_micros, author, "timestamp", content, custom_metadata
FROM agentstate_memories
WHERE app_name = $1 AND user_id = $2 AND (expire_micros IS NULL OR expire_micros > $3)
    AND (create_micros, source, memory_id) > ($4, $5, $6)
ORDER BY create_micros, source, memory_id
LIMIT $7
