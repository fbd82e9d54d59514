-- The session's state, marker and expire time, its rows locked until the append's transaction
-- ends. A template (see `ops/commit.rs`): its two slots add the user's and the app's state row
-- when the append changes it, read and locked in the same round trip, after the session's (each
-- joins on it: the order every write locks in).
SELECT s.state, s.update_time, a.expire_time{columns} FROM sessions s
LEFT JOIN agentstate_session_attributes a
  ON a.app_name = s.app_name AND a.user_id = s.user_id AND a.session_id = s.id AND a.session_create_time = s.create_time
{joins}
WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?
FOR UPDATE
