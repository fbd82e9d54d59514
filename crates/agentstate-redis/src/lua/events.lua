-- A page of a session's events, oldest first, from a time bound; nil when there is no such
-- session. A session's event times strictly increase, so a time alone is a position.
-- KEYS: 1 meta, 2 event times, 3 event data
-- ARGV: 1 lower bound (a ZRANGEBYSCORE min: '-inf', 't' or '(t'), 2 at most this many
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], '+inf', 'LIMIT', 0, tonumber(ARGV[2]))
local events = {}
local i = 1
while i <= #ids do
  local upto = math.min(i + 999, #ids)
  local chunk = redis.call('HMGET', KEYS[3], unpack(ids, i, upto))
  for j = 1, #chunk do events[#events + 1] = chunk[j] end
  i = upto + 1
end
return events
