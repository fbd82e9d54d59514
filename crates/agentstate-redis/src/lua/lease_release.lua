-- Gives a run lease back if ARGV[2] holds it; answers 1 if it did.
-- KEYS: 1 the user's leases. ARGV: 1 session id, 2 holder.
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if entry and string.match(entry, '^%-?%d+ %d+ (.*)$') == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
