-- Sets a session's expire time ('' for never) on its metadata and every key it owns, and in the
-- app's expiring set; 0 if there is no such session.
-- KEYS: 1 meta, 2 state, 3 event times, 4 event data, 5 invocations, 6 snapshot positions,
--       7 snapshot states, 8 expiring
-- ARGV: 1 expire time (µs) or '', 2 list member, 3 the time expiry is judged at (µs, '' for
--       not judged): a session expired then is not there
local expire = redis.call('HGET', KEYS[1], 'expire')
if redis.call('EXISTS', KEYS[1]) == 0 or (ARGV[3] ~= '' and expire and tonumber(expire) <= tonumber(ARGV[3])) then
  return 0
end
if ARGV[1] == '' then
  redis.call('HDEL', KEYS[1], 'expire')
  for i = 1, 7 do
    redis.call('PERSIST', KEYS[i])
  end
  redis.call('ZREM', KEYS[8], ARGV[2])
else
  redis.call('HSET', KEYS[1], 'expire', ARGV[1])
  local at = math.ceil(tonumber(ARGV[1]) / 1000)
  for i = 1, 7 do
    redis.call('PEXPIREAT', KEYS[i], at)
  end
  redis.call('ZADD', KEYS[8], ARGV[1], ARGV[2])
end
return 1
