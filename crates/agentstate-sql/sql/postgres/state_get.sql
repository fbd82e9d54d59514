-- The raw state of an app ($2, $3 NULL), a user ($3 NULL) or a session.
SELECT state FROM app_states WHERE app_name = $1 AND $2::text IS NULL AND $3::text IS NULL
UNION ALL
SELECT state FROM user_states WHERE app_name = $1 AND user_id = $2 AND $3::text IS NULL
UNION ALL
SELECT state FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3
