-- Copies an artifact's versions numbered up to ARGV[1] to another artifact of the same user,
-- which holds none, keeping their numbers (a fork): the payloads are copied inside Redis, never
-- sent to the server and back. Answers how many.
-- KEYS: 1 the source, 2 the target, 3 the target's session's names, 4 the user's sessions with
-- artifacts
-- ARGV: 1 the last version, 2 the target's name, 3 its session
local n, p = version_range(KEYS[1])
local last = math.min(tonumber(ARGV[1]), n - 1)
if last < p then return 0 end
for v = p, last do
  local fields = redis.call('HMGET', KEYS[1], 'm:' .. v, 'd:' .. v)
  redis.call('HSET', KEYS[2], 'm:' .. v, fields[1], 'd:' .. v, fields[2])
end
redis.call('HSET', KEYS[2], 'n', last + 1, 'p', p)
redis.call('ZADD', KEYS[3], 0, ARGV[2])
redis.call('SADD', KEYS[4], ARGV[3])
return last - p + 1
