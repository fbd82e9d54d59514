-- Removes an artifact's versions numbered below ARGV[1] (never its latest), the others keeping
-- their numbers; answers how many went.
-- KEYS: 1 the artifact
-- ARGV: 1 the first version to keep
local counts = redis.call('HMGET', KEYS[1], 'n', 'p')
local n, p = tonumber(counts[1] or '0'), tonumber(counts[2] or '0')
local below = math.min(tonumber(ARGV[1]), n - 1)
if below <= p then return 0 end
for v = p, below - 1 do redis.call('HDEL', KEYS[1], 'm:' .. v, 'd:' .. v) end
redis.call('HSET', KEYS[1], 'p', below)
return below - p
