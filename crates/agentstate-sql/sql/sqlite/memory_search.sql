-- The memories of a search's ranked hits (?1: their row ids as a JSON array, best first), in that
-- order, where they are the owner's and live; an expired one among them leaves the page shorter
-- (the sweep removes them).
SELECT m.memory_id, m.source, m.create_micros, m.expire_micros, m.author, m.timestamp, m.content, m.custom_metadata
FROM json_each(?1) AS hit CROSS JOIN agentstate_memories m ON m.row_id = hit.value
WHERE m.app_name = ?2 AND m.user_id = ?3 AND (m.expire_micros IS NULL OR m.expire_micros > ?4)
ORDER BY hit.key
