-- The sweep, for one entry of the app's expiring memories: removes the memory if it expired at or
-- before ARGV[5] (answers 1), else only the stale entry (answers 0).
-- KEYS: 1 the owner's order zset (routes the script to its node; every key shares its slot)
-- ARGV: 1 base, 2 escaped user, 3 user, 4 member, 5 before (µs)
local base, user, raw_user, member = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local expire = redis.call('HGET', base .. 'mx:' .. user, member)
if expire and tonumber(expire) <= tonumber(ARGV[5]) then
  unindex(base, user, raw_user, member)
  return 1
end
redis.call('ZREM', base .. 'memx', raw_user .. '\0' .. member)
return 0
