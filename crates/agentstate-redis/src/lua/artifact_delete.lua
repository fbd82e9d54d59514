-- Removes every version of an artifact; answers how many.
-- KEYS: 1 the artifact, 2 its session's names, 3 the user's sessions with artifacts
-- ARGV: 1 name, 2 session ('' for a user: name)
local n = kept_versions(KEYS[1])
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('ZCARD', KEYS[2]) == 0 then redis.call('SREM', KEYS[3], ARGV[2]) end
return n
