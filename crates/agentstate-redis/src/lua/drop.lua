-- Retention: drops a session's events older than the cut and its history snapshots before it,
-- and keeps the boundary snapshot (the state just before the cut); answers how many events went.
-- KEYS: 1 meta, 2 event times, 3 event data, 4 snapshot positions, 5 snapshot states, 6 event facts
-- ARGV: 1 cut (µs), 2 boundary position (µs), 3 boundary state JSON
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local below = '(' .. ARGV[1]
local function drop(zset, ...)
  local members = redis.call('ZRANGEBYSCORE', zset, '-inf', below)
  local i = 1
  while i <= #members do
    local upto = math.min(i + 999, #members)
    for _, hash in ipairs({...}) do
      redis.call('HDEL', hash, unpack(members, i, upto))
    end
    i = upto + 1
  end
  redis.call('ZREMRANGEBYSCORE', zset, '-inf', below)
  return #members
end
local dropped = drop(KEYS[2], KEYS[3], KEYS[6])
drop(KEYS[4], KEYS[5])
redis.call('ZADD', KEYS[4], ARGV[2], '')
redis.call('HSET', KEYS[5], '', ARGV[3])
expire_with_session(KEYS[1], KEYS[4], KEYS[5])
return dropped
