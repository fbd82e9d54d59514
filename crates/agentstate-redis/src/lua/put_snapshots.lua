-- Keeps history snapshots, for a session that still exists.
-- KEYS: 1 meta, 2 snapshot positions, 3 snapshot states
-- ARGV: triples (time in µs, event id, state JSON)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
for i = 1, #ARGV, 3 do
  redis.call('ZADD', KEYS[2], ARGV[i], ARGV[i + 1])
  redis.call('HSET', KEYS[3], ARGV[i + 1], ARGV[i + 2])
end
expire_with_session(KEYS[1], KEYS[2], KEYS[3])
return #ARGV / 3
