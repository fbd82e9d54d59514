-- The owner's live memories matching any alternative (every term of it), those matching more
-- alternatives first, then the oldest: {JSON, create, JSON, create, …}, at most ARGV[4].
-- KEYS: 1 the owner's order zset (routes the script to its node; every key shares its slot)
-- ARGV: 1 base, 2 escaped user, 3 now (µs), 4 limit, 5 number of alternatives, then each
--       alternative as its number of terms and the terms
local base, user, now, limit = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local counts, order = {}, {}
local i = 6
for _ = 1, tonumber(ARGV[5]) do
  local n = tonumber(ARGV[i])
  local keys = {}
  for j = 1, n do keys[j] = base .. 'mi:' .. user .. ':' .. ARGV[i + j] end
  i = i + n + 1
  local members = n == 1 and redis.call('SMEMBERS', keys[1]) or redis.call('SINTER', unpack(keys))
  for _, member in ipairs(members) do
    if not counts[member] then order[#order + 1] = member end
    counts[member] = (counts[member] or 0) + 1
  end
end
local found = {}
for _, member in ipairs(order) do
  if live(base, user, member, now) then
    local score = redis.call('ZSCORE', base .. 'mo:' .. user, member)
    found[#found + 1] = {member, counts[member], tonumber(score), score}
  end
end
table.sort(found, function(a, b)
  if a[2] ~= b[2] then return a[2] > b[2] end
  if a[3] ~= b[3] then return a[3] < b[3] end
  return a[1] < b[1]
end)
local out = {}
for k = 1, math.min(limit, #found) do
  out[#out + 1] = redis.call('HGET', base .. 'md:' .. user, found[k][1])
  out[#out + 1] = found[k][4]
end
return out
