-- A page of an owner's log of state writes without a session (user '' for the app's), newest
-- first, strictly before a position (time, id).
SELECT at_micros, write_id, origin, set_keys, deleted_keys FROM agentstate_state_writes
WHERE app_name = ? AND user_id = ? AND (at_micros, write_id) < (?, ?)
ORDER BY at_micros DESC, write_id DESC
LIMIT ?
