-- Creates a session, atomically: refuses a taken id, merges the shared scopes field by field,
-- writes the session's metadata and state, its list entries and its creation snapshot.
-- KEYS: 1 meta, 2 state, 3 app, 4 user, 5 sessions, 6 user's sessions, 7 users with this id,
--       8 snapshot positions, 9 snapshot states, 10 expiring sessions, 11 the app's users,
--       12 event times, 13 event data, 14 first event of each invocation, 15 sessions by creation,
--       16 user's sessions by creation, 17 event facts
-- ARGV: 1 create time (µs), 2 list member, 3 session id, 4 user id, 5 creation snapshot ('' none),
--       6 display name ('' none), 7 labels JSON ('' none), 8 expire time ('' none),
--       9 session fields, 10 app fields, 11 user fields (counts of pairs), then the pairs.
-- Values are JSON text written by the client; this script never decodes them.
-- A session under this id that expired by the new one's creation time (ARGV 1) goes first, with
-- its events and history.
if redis.call('EXISTS', KEYS[1]) == 1 then
  local expire = redis.call('HGET', KEYS[1], 'expire')
  if not expire or tonumber(expire) > tonumber(ARGV[1]) then
    return 'exists'
  end
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[8], KEYS[9], KEYS[12], KEYS[13], KEYS[14], KEYS[17])
  redis.call('ZREM', KEYS[10], ARGV[2])
end
local function hset_pairs(key, from, count)
  local i = from
  local last = from + 2 * count - 1
  while i <= last do
    local upto = math.min(i + 999, last)
    redis.call('HSET', key, unpack(ARGV, i, upto))
    i = upto + 1
  end
  return from + 2 * count
end
local at = 12
at = hset_pairs(KEYS[2], at, tonumber(ARGV[9]))
at = hset_pairs(KEYS[3], at, tonumber(ARGV[10]))
at = hset_pairs(KEYS[4], at, tonumber(ARGV[11]))
redis.call('HSET', KEYS[1], 'create', ARGV[1], 'update', ARGV[1])
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'name', ARGV[6]) end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'labels', ARGV[7]) end
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'expire', ARGV[8]) end
redis.call('ZADD', KEYS[5], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[6], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[15], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[16], ARGV[1], ARGV[3])
redis.call('SADD', KEYS[7], ARGV[4])
redis.call('SADD', KEYS[11], ARGV[4])
if ARGV[5] ~= '' then
  redis.call('ZADD', KEYS[8], '-inf', '')
  redis.call('HSET', KEYS[9], '', ARGV[5])
end
-- An expiring session's own keys expire with it (Redis removes them by itself); the app's
-- expiring set lets the sweep remove its list entries.
if ARGV[8] ~= '' then
  local at = math.ceil(tonumber(ARGV[8]) / 1000)
  for _, key in ipairs({KEYS[1], KEYS[2], KEYS[8], KEYS[9]}) do
    redis.call('PEXPIREAT', key, at)
  end
  redis.call('ZADD', KEYS[10], ARGV[8], ARGV[2])
end
return {redis.call('HGETALL', KEYS[3]), redis.call('HGETALL', KEYS[4])}
