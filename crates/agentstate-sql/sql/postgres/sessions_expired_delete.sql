-- Deletes up to $2 sessions whose expire time is at or before $1, oldest expiry first (served by
-- idx_agentstate_attributes_expire), with their artifacts, in one statement; events, attributes
-- and snapshots go by cascade. Rows another sweep holds are skipped, not waited for. Answers the
-- sessions that went.
WITH gone AS (
  DELETE FROM sessions s
  USING (
    SELECT a.app_name, a.user_id, a.session_id, a.session_create_time
    FROM agentstate_session_attributes a
    WHERE a.expire_time <= $1
    ORDER BY a.expire_time
    LIMIT $2
    FOR UPDATE SKIP LOCKED
  ) x
  WHERE s.app_name = x.app_name AND s.user_id = x.user_id AND s.id = x.session_id
    AND s.create_time = x.session_create_time
  RETURNING s.app_name, s.user_id, s.id
), artifacts AS (
  DELETE FROM agentstate_artifacts f
  USING gone g
  WHERE f.app_name = g.app_name AND f.user_id = g.user_id AND f.session_id = g.id
)
SELECT app_name, user_id, id FROM gone
