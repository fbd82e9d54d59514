-- An event's stored data replaced; its facts, of the old data, dropped (the view reads the text).
WITH forget AS (
    DELETE FROM agentstate_event_facts WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND event_id = $4
)
UPDATE events SET event_data = $5::jsonb WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND id = $4
