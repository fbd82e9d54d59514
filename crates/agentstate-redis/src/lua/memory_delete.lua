-- Removes the owner's memories with an id (every source) and remembers the id as deleted if
-- there were any; answers how many.
-- KEYS: 1 the owner's order zset (routes the script to its node; every key shares its slot)
-- ARGV: 1 base, 2 escaped user, 3 user, 4 escaped id, 5 id
local base, user, raw_user = ARGV[1], ARGV[2], ARGV[3]
local members = redis.call('SMEMBERS', base .. 'mn:' .. user .. ':' .. ARGV[4])
for _, member in ipairs(members) do unindex(base, user, raw_user, member) end
if #members > 0 then redis.call('SADD', base .. 'mdel:' .. user, ARGV[5]) end
return #members
