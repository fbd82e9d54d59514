-- Loads a session: metadata, its state, the app's and the user's, and a window of its events,
-- from one consistent point in time. Returns nil when there is no such session.
-- KEYS: 1 meta, 2 state, 3 app, 4 user, 5 event times, 6 event data, 7 event facts
-- ARGV: 1 at most this many of the newest events ('' for all), 2 only at or after this time
--       (µs, '' for any), 3 the time expiry is judged at (µs, '' for not judged), 4 'facts' for
--       what the compacted view reads instead of events: every event's id and time (µs) in
--       order, then for each its facts, or its JSON where it has none (an older event)
local meta = redis.call('HGETALL', KEYS[1])
if #meta == 0 then
  return false
end
if ARGV[3] ~= '' then
  for i = 1, #meta, 2 do
    if meta[i] == 'expire' and tonumber(meta[i + 1]) <= tonumber(ARGV[3]) then
      return false
    end
  end
end
local states = {meta, redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]), redis.call('HGETALL', KEYS[4])}
if ARGV[4] == 'facts' then
  local times = redis.call('ZRANGE', KEYS[5], 0, -1, 'WITHSCORES')
  local facts = {}
  local i = 1
  while i <= #times do
    local ids = {}
    for j = i, math.min(i + 1998, #times), 2 do ids[#ids + 1] = times[j] end
    local kept = redis.call('HMGET', KEYS[7], unpack(ids))
    for j = 1, #ids do
      facts[#facts + 1] = kept[j] or redis.call('HGET', KEYS[6], ids[j]) or ''
    end
    i = i + 2 * #ids
  end
  states[5] = times
  states[6] = facts
  return states
end
local recent, after = ARGV[1], ARGV[2]
local ids
if recent ~= '' and tonumber(recent) == 0 then
  ids = {}
elseif recent ~= '' and after ~= '' then
  local newest = redis.call('ZREVRANGEBYSCORE', KEYS[5], '+inf', after, 'LIMIT', 0, tonumber(recent))
  ids = {}
  for i = #newest, 1, -1 do ids[#ids + 1] = newest[i] end
elseif recent ~= '' then
  ids = redis.call('ZRANGE', KEYS[5], -tonumber(recent), -1)
elseif after ~= '' then
  ids = redis.call('ZRANGEBYSCORE', KEYS[5], after, '+inf')
else
  ids = redis.call('ZRANGE', KEYS[5], 0, -1)
end
local events = values_of(KEYS[6], ids)
states[5] = events
return states
