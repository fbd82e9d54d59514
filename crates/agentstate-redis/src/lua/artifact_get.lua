-- One version of an artifact ('' : the latest): {version, metadata JSON, payload}, or nil.
-- KEYS: 1 the artifact
-- ARGV: 1 the version, or ''
local n, p = version_range(KEYS[1])
local v = n - 1
if ARGV[1] ~= '' then v = tonumber(ARGV[1]) end
if v < p or v >= n then return false end
return {v, redis.call('HGET', KEYS[1], 'm:' .. v), redis.call('HGET', KEYS[1], 'd:' .. v)}
