INSERT INTO agentstate_event_facts (app_name, user_id, session_id, event_id, invocation_id, micros, facts)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE invocation_id = VALUES(invocation_id), micros = VALUES(micros), facts = VALUES(facts)
