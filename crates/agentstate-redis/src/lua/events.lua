-- Events of a session, oldest first: a page from a time bound, the event with an id, or the
-- first event of an invocation. nil when there is no such session, or it expired. A session's
-- event times strictly increase, so a time alone is a position.
-- KEYS: 1 meta, 2 event times, 3 event data, 4 first event of each invocation
-- ARGV: 1 the time expiry is judged at (µs, '' for not judged), 2 what: 'page', 'latest', 'id'
--       or 'invocation'; for a page 3 the lower bound (a ZRANGEBYSCORE min: '-inf', 't' or '(t')
--       and 4 at most this many; for 'latest' (the newest, answered oldest first) 3 the upper
--       bound ('+inf' or '(t'), 4 at most this many and 5 the lower bound ('-inf' or 't'); else 3
--       the event or invocation id
local expire = redis.call('HGET', KEYS[1], 'expire')
if redis.call('EXISTS', KEYS[1]) == 0 or (ARGV[1] ~= '' and expire and tonumber(expire) <= tonumber(ARGV[1])) then
  return false
end
local ids
if ARGV[2] == 'page' then
  ids = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[3], '+inf', 'LIMIT', 0, tonumber(ARGV[4]))
elseif ARGV[2] == 'latest' then
  local newest = redis.call('ZREVRANGEBYSCORE', KEYS[2], ARGV[3], ARGV[5], 'LIMIT', 0, tonumber(ARGV[4]))
  ids = {}
  for i = #newest, 1, -1 do ids[#ids + 1] = newest[i] end
elseif ARGV[2] == 'id' then
  ids = {ARGV[3]}
else
  local first = redis.call('HGET', KEYS[4], ARGV[3])
  ids = first and {first} or {}
end
return values_of(KEYS[3], ids)
