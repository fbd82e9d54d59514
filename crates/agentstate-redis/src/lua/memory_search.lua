-- The owner's live memories matching any alternative (every term of it), at most ARGV[4]: those
-- found by more alternatives first, then those of an alternative with fewer hits (a rarer word),
-- then the newest: {JSON, create, JSON, create, …}. Each alternative reads at most ARGV[4] of its
-- newest hits, never every hit of a common word; one cut there fills the page by itself, so a
-- short answer still means nothing more matched.
-- KEYS: 1 the owner's order zset (routes the script to its node; every key shares its slot)
-- ARGV: 1 base, 2 escaped user, 3 now (µs), 4 limit, 5 number of alternatives, then each
--       alternative as its number of terms and the terms
local base, user, now, limit = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local chunk = math.min(math.max(limit, 256), 4000) -- ZMSCORE takes a chunk as arguments

-- The newest members (with their create time) in every one of `keys`, at most `limit`, and how
-- many hits the alternative has (exact when under the limit; else its rarest term's count).
local function newest_hits(keys)
  local cards = {}
  for _, key in ipairs(keys) do cards[key] = redis.call('ZCARD', key) end
  table.sort(keys, function(a, b) return cards[a] < cards[b] end)
  local rarest = cards[keys[1]]
  local hits, start = {}, 0
  while #hits < limit and start < rarest do
    local page = redis.call('ZREVRANGE', keys[1], start, start + chunk - 1, 'WITHSCORES')
    start = start + chunk
    local members = {}
    for k = 1, #page, 2 do members[#members + 1] = page[k] end
    local present = {}
    for k = 2, #keys do present[k] = redis.call('ZMSCORE', keys[k], unpack(members)) end
    for m = 1, #members do
      local everywhere = true
      for k = 2, #keys do
        if not present[k][m] then everywhere = false break end
      end
      if everywhere and #hits < limit then hits[#hits + 1] = {members[m], page[2 * m]} end
    end
  end
  return hits, #hits < limit and #hits or rarest
end

local found, order = {}, {}
local i = 6
for _ = 1, tonumber(ARGV[5]) do
  local n = tonumber(ARGV[i])
  local keys = {}
  for j = 1, n do keys[j] = term_index(base, user, ARGV[i + j]) end
  i = i + n + 1
  local hits, count = newest_hits(keys)
  for _, hit in ipairs(hits) do
    local member = hit[1]
    local seen = found[member]
    if not seen then
      seen = {member, 0, count, tonumber(hit[2]), hit[2]}
      found[member] = seen
      order[#order + 1] = seen
    end
    seen[2] = seen[2] + 1
    seen[3] = math.min(seen[3], count)
  end
end
table.sort(order, function(a, b)
  if a[2] ~= b[2] then return a[2] > b[2] end
  if a[3] ~= b[3] then return a[3] < b[3] end
  if a[4] ~= b[4] then return a[4] > b[4] end
  return a[1] < b[1]
end)
local out = {}
for _, hit in ipairs(order) do
  if #out >= 2 * limit then break end
  if live(base, user, hit[1], now) then
    out[#out + 1] = redis.call('HGET', base .. 'md:' .. user, hit[1])
    out[#out + 1] = hit[5]
  end
end
return out
