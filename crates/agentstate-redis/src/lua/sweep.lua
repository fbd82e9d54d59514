-- Removes one expired session (what Redis has not expired by itself yet) and its list entries;
-- 1 if it was expired, 0 if the id now holds a session created again that has not expired
-- (then only the stale entry of the expiring set goes).
-- KEYS: 1 meta, 2 state, 3 event times, 4 event data, 5 invocations, 6 snapshot positions,
--       7 snapshot states, 8 event facts, 9 sessions, 10 user's sessions, 11 users with this id,
--       12 expiring, 13 sessions by creation, 14 user's sessions by creation
-- ARGV: 1 list member, 2 session id, 3 user id, 4 now (µs)
local expire = redis.call('HGET', KEYS[1], 'expire')
if redis.call('EXISTS', KEYS[1]) == 1 and (not expire or tonumber(expire) > tonumber(ARGV[4])) then
  if not expire then
    redis.call('ZREM', KEYS[12], ARGV[1])
  end
  return 0
end
remove_session()
return 1
