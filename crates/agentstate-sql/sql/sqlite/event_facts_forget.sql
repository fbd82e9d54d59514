DELETE FROM agentstate_event_facts WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 AND event_id = ?4
