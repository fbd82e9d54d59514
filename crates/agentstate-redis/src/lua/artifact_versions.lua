-- Every version's metadata JSON of an artifact, oldest first, after the first one's number:
-- {first, metadata...}.
-- KEYS: 1 the artifact
local n, p = version_range(KEYS[1])
if n <= p then return {tostring(p)} end
local fields = {}
for v = p, n - 1 do fields[#fields + 1] = 'm:' .. v end
local answer = redis.call('HMGET', KEYS[1], unpack(fields))
table.insert(answer, 1, tostring(p))
return answer
