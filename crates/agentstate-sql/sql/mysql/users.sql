-- Every user of an app with sessions or state (the app once, as PostgreSQL takes it).
WITH p AS (SELECT ? AS app_name)
SELECT s.user_id FROM p JOIN sessions s ON s.app_name = p.app_name
UNION
SELECT u.user_id FROM p JOIN user_states u ON u.app_name = p.app_name
ORDER BY 1
