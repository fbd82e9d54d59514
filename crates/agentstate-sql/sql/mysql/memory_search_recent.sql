-- The newest memories of the table (every owner's: terms are salted per owner, so matching them
-- finds the searching owner's alone), at most ?, for a search to match its alternatives against
-- before it asks the FULLTEXT index. Read backwards on the primary key: as many rows as asked.
SELECT row_id, terms FROM agentstate_memories ORDER BY row_id DESC LIMIT ?
