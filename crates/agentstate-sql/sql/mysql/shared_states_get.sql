-- The user's and the app's state (NULL for a row that is not there) in one round trip: a session
-- created with no user or app state reads both, and writes a row only when it is missing.
SELECT (SELECT state FROM user_states WHERE app_name = ? AND user_id = ?) AS user_state,
       (SELECT state FROM app_states WHERE app_name = ?) AS app_state
