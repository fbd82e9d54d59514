-- Removes one session (deleted, or of a user being erased) with its list entries; answers {1 if
-- it was there, how many events it had}.
-- KEYS: 1 meta, 2 state, 3 event times, 4 event data, 5 invocations, 6 snapshot positions,
--       7 snapshot states, 8 event facts, 9 sessions, 10 user's sessions, 11 users with this id,
--       12 expiring, 13 sessions by creation, 14 user's sessions by creation
-- ARGV: 1 list member, 2 session id, 3 user id
local existed = redis.call('EXISTS', KEYS[1])
local events = redis.call('ZCARD', KEYS[3])
remove_session()
return {existed, events}
