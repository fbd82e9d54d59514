-- One alternative of a search looked up in the FULLTEXT index by its rarer terms (`+a +b`); the
-- search appends a condition per commoner term (`AND INSTR(terms, ?) > 0`, checked on the rows the
-- index gives) and the limit. Asked only for an alternative the newest memories did not fill. No
-- ORDER BY and no score: ordering or ranking reads every hit's row.
SELECT row_id FROM agentstate_memories WHERE MATCH (terms) AGAINST (? IN BOOLEAN MODE)
