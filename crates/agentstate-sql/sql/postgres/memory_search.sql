-- An owner's live memories matching any of the alternatives $1 (tsqueries, the most specific
-- first), at most $2: those found by more alternatives first, then those of an alternative with
-- fewer hits (a rarer word), then the newest. Terms are salted per owner, so a term's hits are
-- that owner's. Each alternative looks first among the $6 newest memories of the table, read
-- backwards on the primary key and only as far as some alternative needs (a word in half of a
-- user's memories finds its $2 there after about 2×$2 rows); only an alternative with fewer than $2
-- hits there asks the GIN index, for at most $2 more, whose bitmap is then that of a rarer word
-- (or of one the newest memories do not use). No ts_rank: ranking every hit reads every hit. The
-- ranked row ids are read last, with the owner ($3, $4) and expiry ($5) checked on them (an
-- expired memory among them leaves the page shorter; the sweep removes them). An alternative cut at
-- $2 fills the page alone, so a short page still means nothing more matched.
WITH alternative AS MATERIALIZED (
    SELECT a.ord, to_tsquery('simple', a.query) AS q FROM unnest($1::text[]) WITH ORDINALITY AS a(query, ord)
), recent AS MATERIALIZED (
    SELECT row_id, terms_vector FROM agentstate_memories ORDER BY row_id DESC LIMIT $6
), recent_hits AS MATERIALIZED (
    SELECT a.ord, hit.row_id FROM alternative a CROSS JOIN LATERAL (
        SELECT r.row_id FROM recent r WHERE r.terms_vector @@ a.q LIMIT $2
    ) hit
), older_hits AS MATERIALIZED (
    SELECT a.ord, hit.row_id FROM alternative a CROSS JOIN LATERAL (
        SELECT m.row_id FROM agentstate_memories m WHERE m.terms_vector @@ a.q LIMIT $2
    ) hit
    WHERE (SELECT count(*) FROM recent_hits h WHERE h.ord = a.ord) < $2
), hits AS MATERIALIZED (
    SELECT ord, row_id, count(*) OVER (PARTITION BY ord) AS many
    FROM (SELECT ord, row_id FROM recent_hits UNION SELECT ord, row_id FROM older_hits) either
), ranked AS MATERIALIZED (
    SELECT row_id, count(*) AS alternatives, min(many) AS fewest FROM hits GROUP BY row_id
    ORDER BY alternatives DESC, fewest, row_id DESC LIMIT $2
), found AS MATERIALIZED (
    -- Joined on the primary key alone: with the owner in this join, a planner without statistics
    -- walks the owner's whole index instead.
    SELECT m.memory_id, m.source, m.create_micros, m.expire_micros, m.author, m."timestamp", m.content,
        m.custom_metadata, m.app_name, m.user_id, ranked.alternatives, ranked.fewest, m.row_id
    FROM ranked JOIN agentstate_memories m ON m.row_id = ranked.row_id
)
SELECT memory_id, source, create_micros, expire_micros, author, "timestamp", content, custom_metadata
FROM found
WHERE app_name = $3 AND user_id = $4 AND (expire_micros IS NULL OR expire_micros > $5)
ORDER BY alternatives DESC, fewest, row_id DESC
