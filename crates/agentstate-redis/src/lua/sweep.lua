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
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8])
redis.call('ZREM', KEYS[9], ARGV[1])
redis.call('ZREM', KEYS[10], ARGV[2])
redis.call('ZREM', KEYS[13], ARGV[1])
redis.call('ZREM', KEYS[14], ARGV[2])
redis.call('SREM', KEYS[11], ARGV[3])
redis.call('ZREM', KEYS[12], ARGV[1])
return 1
