-- Replaces fields of a state hash that still hold the expected JSON text; how many.
-- KEYS: 1 the hash
-- ARGV: triples (field, expected, replacement)
local swapped = 0
for i = 1, #ARGV, 3 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
    swapped = swapped + 1
  end
end
return swapped
