-- Removes an artifact's versions numbered below ARGV[1] (never its latest), the others keeping
-- their numbers; answers how many went.
-- KEYS: 1 the artifact
-- ARGV: 1 the first version to keep
local n, p = version_range(KEYS[1])
local below = math.min(tonumber(ARGV[1]), n - 1)
if below <= p then return 0 end
for v = p, below - 1 do redis.call('HDEL', KEYS[1], 'm:' .. v, 'd:' .. v) end
redis.call('HSET', KEYS[1], 'p', below)
return below - p
