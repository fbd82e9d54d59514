-- An owner's live memories whose terms match a boolean-mode FULLTEXT query (given twice: to
-- match and to rank), best ranked first. The match and the rank run first, alone, on the
-- FULLTEXT index (terms are salted per owner, so its hits are that owner's), and keep the best
-- (the limit) as row ids only; the rows are read for those, and the owner and expiry checked on
-- them (an expired memory among the best leaves the page shorter; the sweep removes them).
SELECT m.memory_id, m.source, m.create_micros, m.expire_micros, m.author, m.`timestamp`, m.content, m.custom_metadata
FROM (
  SELECT row_id, MATCH (terms) AGAINST (? IN BOOLEAN MODE) AS score
  FROM agentstate_memories
  WHERE MATCH (terms) AGAINST (? IN BOOLEAN MODE)
  ORDER BY score DESC, row_id
  LIMIT ?
) hits JOIN agentstate_memories m ON m.row_id = hits.row_id
WHERE m.app_name = ? AND m.user_id = ? AND (m.expire_micros IS NULL OR m.expire_micros > ?)
ORDER BY hits.score DESC, m.row_id
