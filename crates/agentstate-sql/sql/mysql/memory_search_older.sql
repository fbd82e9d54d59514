-- More of the table's newest memories: older than the oldest read so far (row id ?), at most ?.
-- For an alternative the window held some of, but not a page of, whose page lies a few hundred
-- rows further back. Read backwards on the primary key, as the first window.
SELECT row_id, terms FROM agentstate_memories WHERE row_id < ? ORDER BY row_id DESC LIMIT ?
