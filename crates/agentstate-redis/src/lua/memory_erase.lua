-- Removes every memory of the owner and the ids it deleted; answers how many memories.
-- KEYS: 1 the owner's order zset (routes the script to its node; every key shares its slot)
-- ARGV: 1 base, 2 escaped user, 3 user
local base, user, raw_user = ARGV[1], ARGV[2], ARGV[3]
local members = redis.call('ZRANGE', base .. 'mo:' .. user, 0, -1)
for _, member in ipairs(members) do unindex(base, user, raw_user, member) end
redis.call('DEL', base .. 'mdel:' .. user)
redis.call('ZREM', base .. 'mu', raw_user)
return #members
