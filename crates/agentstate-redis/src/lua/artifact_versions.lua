-- Every version's metadata JSON of an artifact, oldest first.
-- KEYS: 1 the artifact
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if n == 0 then return {} end
local fields = {}
for v = 0, n - 1 do fields[#fields + 1] = 'm:' .. v end
return redis.call('HMGET', KEYS[1], unpack(fields))
