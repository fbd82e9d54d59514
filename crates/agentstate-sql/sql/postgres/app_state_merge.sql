-- An app's state written without a session ($1 app, $2 delta, $3 deleted keys, $4 now): merged key
-- by key into the row (created if missing), then the deleted keys removed, in one statement:
-- atomic per key, as an append's merge of `app:` keys.
INSERT INTO app_states (app_name, state, update_time) VALUES ($1, $2::jsonb - $3::text[], $4)
ON CONFLICT (app_name)
DO UPDATE SET state = (app_states.state || $2::jsonb) - $3::text[], update_time = EXCLUDED.update_time
