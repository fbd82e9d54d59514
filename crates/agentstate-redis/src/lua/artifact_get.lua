-- One version of an artifact ('' : the latest): {version, metadata JSON, payload}, or nil.
-- KEYS: 1 the artifact
-- ARGV: 1 the version, or ''
local counts = redis.call('HMGET', KEYS[1], 'n', 'p')
local n, p = tonumber(counts[1] or '0'), tonumber(counts[2] or '0')
local v = n - 1
if ARGV[1] ~= '' then v = tonumber(ARGV[1]) end
if v < p or v >= n then return false end
return {v, redis.call('HGET', KEYS[1], 'm:' .. v), redis.call('HGET', KEYS[1], 'd:' .. v)}
