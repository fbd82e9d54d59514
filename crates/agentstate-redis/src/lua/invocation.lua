-- The first event of an invocation in a session, or nil.
-- KEYS: 1 first event of each invocation, 2 event data
-- ARGV: 1 invocation id
local id = redis.call('HGET', KEYS[1], ARGV[1])
if not id then
  return false
end
return redis.call('HGET', KEYS[2], id)
