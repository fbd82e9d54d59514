-- A page of an owner's live memories after a position (create time, source, id).
SELECT memory_id, source, create_micros, expire_micros, author, `timestamp`, content, custom_metadata
FROM agentstate_memories
WHERE app_name = ? AND user_id = ? AND (expire_micros IS NULL OR expire_micros > ?)
    AND (create_micros, source, memory_id) > (?, ?, ?)
ORDER BY create_micros, source, memory_id
LIMIT ?
