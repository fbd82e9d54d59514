-- Sets a session's display name, labels and expire time as asked, in one step, on its metadata
-- (the expire time also on every key it owns, and in the app's expiring set); 0 if there is no
-- such session.
-- KEYS: 1 meta, 2 state, 3 event times, 4 event data, 5 invocations, 6 snapshot positions,
--       7 snapshot states, 8 event facts, 9 expiring
-- ARGV: 1 '1' to set the display name, 2 the name ('' to clear), 3 '1' to set the labels,
--       4 the labels JSON ('' to clear), 5 the time expiry is judged at (µs, '' for not judged):
--       a session expired then is not there, 6 '1' to set the expire time, 7 the expire time (µs,
--       '' for never), 8 the session's member in the expiring set
local expire = redis.call('HGET', KEYS[1], 'expire')
if redis.call('EXISTS', KEYS[1]) == 0 or (ARGV[5] ~= '' and expire and tonumber(expire) <= tonumber(ARGV[5])) then
  return 0
end
for _, field in ipairs({{'name', 1}, {'labels', 3}}) do
  local name, at = field[1], field[2]
  if ARGV[at] == '1' then
    if ARGV[at + 1] == '' then
      redis.call('HDEL', KEYS[1], name)
    else
      redis.call('HSET', KEYS[1], name, ARGV[at + 1])
    end
  end
end
if ARGV[6] == '1' then
  if ARGV[7] == '' then
    redis.call('HDEL', KEYS[1], 'expire')
    for i = 1, 8 do
      redis.call('PERSIST', KEYS[i])
    end
    redis.call('ZREM', KEYS[9], ARGV[8])
  else
    redis.call('HSET', KEYS[1], 'expire', ARGV[7])
    local at = math.ceil(tonumber(ARGV[7]) / 1000)
    for i = 1, 8 do
      redis.call('PEXPIREAT', KEYS[i], at)
    end
    redis.call('ZADD', KEYS[9], ARGV[7], ARGV[8])
  end
end
return 1
