-- The events a compacted view keeps, by id, oldest first, read after their facts (`get.lua`):
-- false when the session moved on since (another marker) or is gone, for the caller to read again.
-- KEYS: 1 meta, 2 event data
-- ARGV: 1 the marker the facts were read at, 2... the event ids
if redis.call('HGET', KEYS[1], 'update') ~= ARGV[1] then
  return false
end
local ids = {}
for i = 2, #ARGV do ids[#ids + 1] = ARGV[i] end
return values_of(KEYS[2], ids)
