-- A page of the owner's live memories after (create, member), oldest first:
-- {JSON, create, JSON, create, …}, at most ARGV[6].
-- KEYS: 1 the owner's order zset (routes the script to its node; every key shares its slot)
-- ARGV: 1 base, 2 escaped user, 3 now (µs), 4 after create (or '-inf'), 5 after member, 6 limit
local base, user, now, limit = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[6])
local order = base .. 'mo:' .. user
local after_create, after_member = ARGV[4], ARGV[5]
local out, offset = {}, 0
while #out < 2 * limit do
  local batch = redis.call('ZRANGE', order, after_create, '+inf', 'BYSCORE', 'LIMIT', offset, 256, 'WITHSCORES')
  if #batch == 0 then break end
  offset = offset + #batch / 2
  for k = 1, #batch, 2 do
    local member, create = batch[k], batch[k + 1]
    local past = after_create == '-inf' or tonumber(create) > tonumber(after_create) or member > after_member
    if past and live(base, user, member, now) and #out < 2 * limit then
      out[#out + 1] = redis.call('HGET', base .. 'md:' .. user, member)
      out[#out + 1] = create
    end
  end
end
return out
