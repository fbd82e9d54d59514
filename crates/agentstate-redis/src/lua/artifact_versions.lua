-- Every version's metadata JSON of an artifact, oldest first, after the first one's number:
-- {first, metadata...}.
-- KEYS: 1 the artifact
local counts = redis.call('HMGET', KEYS[1], 'n', 'p')
local n, p = tonumber(counts[1] or '0'), tonumber(counts[2] or '0')
if n <= p then return {tostring(p)} end
local fields = {}
for v = p, n - 1 do fields[#fields + 1] = 'm:' .. v end
local answer = redis.call('HMGET', KEYS[1], unpack(fields))
table.insert(answer, 1, tostring(p))
return answer
