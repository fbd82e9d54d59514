-- An owner's live memories whose terms match an FTS5 query, best ranked (bm25) first.
SELECT m.memory_id, m.source, m.create_micros, m.expire_micros, m.author, m.timestamp, m.content, m.custom_metadata
FROM agentstate_memories_fts f JOIN agentstate_memories m ON m.row_id = f.rowid
WHERE f.terms MATCH ?1 AND m.app_name = ?2 AND m.user_id = ?3 AND (m.expire_micros IS NULL OR m.expire_micros > ?4)
ORDER BY f.rank, m.create_micros, m.source, m.memory_id
LIMIT ?5
