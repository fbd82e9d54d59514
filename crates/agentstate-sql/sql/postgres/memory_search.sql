-- An owner's live memories matching any of the alternatives $1 (tsqueries, the most specific
-- first), best ranked ($2: them all as one tsquery) first. Each alternative reads at most $7 hits
-- from the GIN index (terms are salted per owner, so its hits are that owner's): a word in half
-- of a user's memories costs $7 rows, not half of them, while every hit of a rarer alternative
-- (those of all the query's words come first) is a candidate. The candidates are ranked, the best
-- $3 kept as row ids, their rows read, and the owner ($4, $5) and expiry ($6) checked on them (an
-- expired memory among the best $3 leaves the page shorter; the sweep removes them).
WITH candidates AS MATERIALIZED (
    SELECT DISTINCT hit.row_id
    FROM unnest($1::text[]) AS alternative(query)
    CROSS JOIN LATERAL (
        SELECT row_id FROM agentstate_memories
        WHERE terms_vector @@ to_tsquery('simple', alternative.query)
        LIMIT $7
    ) hit
), hits AS MATERIALIZED (
    SELECT m.row_id, ts_rank(m.terms_vector, to_tsquery('simple', $2)) AS rank
    FROM candidates c JOIN agentstate_memories m ON m.row_id = c.row_id
    ORDER BY rank DESC, m.row_id
    LIMIT $3
), found AS MATERIALIZED (
    SELECT m.memory_id, m.source, m.create_micros, m.expire_micros, m.author, m."timestamp", m.content,
        m.custom_metadata, m.app_name, m.user_id, hits.rank, m.row_id
    FROM hits JOIN agentstate_memories m ON m.row_id = hits.row_id
)
SELECT memory_id, source, create_micros, expire_micros, author, "timestamp", content, custom_metadata
FROM found
WHERE app_name = $4 AND user_id = $5 AND (expire_micros IS NULL OR expire_micros > $6)
ORDER BY rank DESC, row_id
