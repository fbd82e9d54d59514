-- Asks the holder of a run lease live at ARGV[2] to stop: it sees the count go up on its next
-- renewal. Answers 1 if a run held it.
-- KEYS: 1 the user's leases. ARGV: 1 session id, 2 now (µs).
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if not entry then
  return 0
end
local lapses, interrupts, holder = string.match(entry, '^(%-?%d+) (%d+) (.*)$')
if not holder or tonumber(lapses) <= tonumber(ARGV[2]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], lapses .. ' ' .. (tonumber(interrupts) + 1) .. ' ' .. holder)
return 1
