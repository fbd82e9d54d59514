-- One alternative of a search (its terms joined by AND, an FTS5 query): its newest hits, at most ?2.
-- Terms are salted per owner, so the hits are that owner's. No bm25: FTS5 ranks by counting every
-- hit of each term first, which for a word in half of a million memories is the whole search.
SELECT rowid FROM agentstate_memories_fts WHERE agentstate_memories_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2
