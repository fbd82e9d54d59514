-- Appends an event, atomically: the session exists, the event id is new (else the stored event
-- is returned for the client to compare), the marker is the one the caller loaded; then the
-- event is stored, each scope's keys are set and deleted field by field, the marker moves.
-- KEYS: 1 meta, 2 state, 3 app, 4 user, 5 event times, 6 event data, 7 first event of each
--       invocation, 8 sessions, 9 user's sessions, 10 snapshot positions, 11 snapshot states,
--       12 expiring sessions, 13 event facts
-- ARGV: 1 event id, 2 event JSON, 3 time (µs), 4 expected marker, 5 invocation id,
--       6 list member, 7 session id,
--       8..13 counts: session sets, session deletes, app sets, app deletes, user sets, user deletes;
--       14 the time expiry is judged at (µs, '' for not judged), 15 where the refresh policy moves
--       an expiring session's expire time ('' for nowhere), 16 the event's facts;
--       then the pairs to set and the fields to delete, in that order.
-- Values are JSON text written by the client; this script never decodes them.
local marker = redis.call('HGET', KEYS[1], 'update')
local expire = redis.call('HGET', KEYS[1], 'expire')
if not marker or (ARGV[14] ~= '' and expire and tonumber(expire) <= tonumber(ARGV[14])) then
  return {'missing'}
end
local stored = redis.call('HGET', KEYS[6], ARGV[1])
if stored then
  return {'duplicate', stored}
end
if marker ~= ARGV[4] then
  return {'stale'}
end
local function chunked(command, key, from, count)
  local i = from
  local last = from + count - 1
  while i <= last do
    local upto = math.min(i + 999, last)
    redis.call(command, key, unpack(ARGV, i, upto))
    i = upto + 1
  end
  return from + count
end
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[6], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[13], ARGV[1], ARGV[16])
if ARGV[5] ~= '' then
  redis.call('HSETNX', KEYS[7], ARGV[5], ARGV[1])
end
local at = 17
for scope = 0, 2 do
  local key = KEYS[2 + scope]
  at = chunked('HSET', key, at, 2 * tonumber(ARGV[8 + 2 * scope]))
  at = chunked('HDEL', key, at, tonumber(ARGV[9 + 2 * scope]))
end
redis.call('HSET', KEYS[1], 'update', ARGV[3])
if expire and ARGV[15] ~= '' and tonumber(ARGV[15]) > tonumber(expire) then
  expire = ARGV[15]
  redis.call('HSET', KEYS[1], 'expire', expire)
  redis.call('ZADD', KEYS[12], expire, ARGV[6])
  redis.call('PEXPIREAT', KEYS[1], math.ceil(tonumber(expire) / 1000))
end
if expire then
  local at = math.ceil(tonumber(expire) / 1000)
  for _, key in ipairs({KEYS[2], KEYS[5], KEYS[6], KEYS[7], KEYS[10], KEYS[11], KEYS[13]}) do
    redis.call('PEXPIREAT', key, at)
  end
end
redis.call('ZADD', KEYS[8], ARGV[3], ARGV[6])
redis.call('ZADD', KEYS[9], ARGV[3], ARGV[7])
return {'ok'}
