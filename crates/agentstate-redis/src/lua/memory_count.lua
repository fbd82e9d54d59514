-- How many live memories the owner has.
-- KEYS: 1 the owner's order zset (routes the script to its node; every key shares its slot)
-- ARGV: 1 base, 2 escaped user, 3 now (µs)
local base, user, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local count = redis.call('ZCARD', base .. 'mo:' .. user)
local expiring = redis.call('HGETALL', base .. 'mx:' .. user)
for k = 2, #expiring, 2 do
  if tonumber(expiring[k]) <= now then count = count - 1 end
end
return count
