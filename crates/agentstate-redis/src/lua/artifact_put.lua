-- Stores an artifact's next version (0 when it has none); answers its number.
-- KEYS: 1 the artifact, 2 its session's names, 3 the user's sessions with artifacts
-- ARGV: 1 metadata JSON, 2 payload, 3 name, 4 session ('' for a user: name)
local n = redis.call('HINCRBY', KEYS[1], 'n', 1) - 1
redis.call('HSET', KEYS[1], 'm:' .. n, ARGV[1], 'd:' .. n, ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[3])
redis.call('SADD', KEYS[3], ARGV[4])
return n
