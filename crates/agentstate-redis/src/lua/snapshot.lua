-- The newest history snapshot at or before a time: {position, state JSON}, or nil.
-- KEYS: 1 meta, 2 snapshot positions, 3 snapshot states
-- ARGV: 1 at or before this time (µs)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local found = redis.call('ZREVRANGEBYSCORE', KEYS[2], ARGV[1], '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
if #found == 0 then
  return false
end
return {found[1], found[2], redis.call('HGET', KEYS[3], found[1])}
