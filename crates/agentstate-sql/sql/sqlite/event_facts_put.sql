INSERT OR REPLACE INTO agentstate_event_facts (app_name, user_id, session_id, event_id, invocation_id, micros, facts)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
