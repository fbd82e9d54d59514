-- Rewrites a stored event's JSON; 0 if the session has no such event.
-- KEYS: 1 event data
-- ARGV: 1 event id, 2 event JSON
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
