-- Rewrites a stored event's JSON and its facts; 0 if the session has no such event.
-- KEYS: 1 event data, 2 event facts
-- ARGV: 1 event id, 2 event JSON, 3 its facts
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
