-- The app's live memories with an id, of every user and source, in (user, source) order:
-- {user, JSON, create, user, JSON, create, …}, at most ARGV[4] memories.
-- KEYS: 1 the app's memory users zset (routes the script to its node; every key shares its slot)
-- ARGV: 1 base, 2 escaped id, 3 now (µs), 4 limit
local base, id, now, limit = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local holders = redis.call('SMEMBERS', base .. 'mw:' .. id)
table.sort(holders)
local out = {}
for _, holder in ipairs(holders) do
  local user, raw_user = member_parts(holder)
  local members = redis.call('SMEMBERS', base .. 'mn:' .. user .. ':' .. id)
  table.sort(members)
  for _, member in ipairs(members) do
    if live(base, user, member, now) and #out < 3 * limit then
      out[#out + 1] = raw_user
      out[#out + 1] = redis.call('HGET', base .. 'md:' .. user, member)
      out[#out + 1] = redis.call('ZSCORE', base .. 'mo:' .. user, member)
    end
  end
end
return out
