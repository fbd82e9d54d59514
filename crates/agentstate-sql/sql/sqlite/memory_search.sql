-- An owner's live memories whose terms match an FTS5 query, best ranked (bm25) first. The match
-- runs first, alone, ranked and cut by FTS5 itself (terms are salted per owner, so it finds that
-- owner's memories); the owner and expiry are checked on those hits, so an expired memory among
-- the best ?5 leaves the page shorter (the sweep removes them).
WITH hits AS MATERIALIZED (
	SELECT rowid AS row_id, rank FROM agentstate_memories_fts WHERE agentstate_memories_fts MATCH ?1
	ORDER BY rank LIMIT ?5
)
SELECT m.memory_id, m.source, m.create_micros, m.expire_micros, m.author, m.timestamp, m.content, m.custom_metadata
FROM hits JOIN agentstate_memories m ON m.row_id = hits.row_id
WHERE m.app_name = ?2 AND m.user_id = ?3 AND (m.expire_micros IS NULL OR m.expire_micros > ?4)
ORDER BY hits.rank, m.create_micros, m.source, m.memory_id
