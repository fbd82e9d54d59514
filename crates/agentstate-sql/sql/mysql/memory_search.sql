-- An owner's live memories whose terms match a boolean-mode FULLTEXT query (given twice: to
-- match and to rank), best ranked first.
SELECT memory_id, source, create_micros, expire_micros, author, `timestamp`, content, custom_metadata
FROM agentstate_memories
WHERE app_name = ? AND user_id = ? AND (expire_micros IS NULL OR expire_micros > ?)
  AND MATCH (terms) AGAINST (? IN BOOLEAN MODE)
ORDER BY MATCH (terms) AGAINST (? IN BOOLEAN MODE) DESC, create_micros, source, memory_id
LIMIT ?
