-- Takes or renews a run lease: free (no entry, or lapsed at ARGV[4]) or already ARGV[2]'s.
-- A holder renewing keeps the interruptions asked of it; a new holder starts with none.
-- KEYS: 1 the user's leases. ARGV: 1 session id, 2 holder, 3 until (µs), 4 now (µs).
-- Answers {holder, until, interruptions} as they are after the call.
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if entry then
  local lapses, interrupts, holder = string.match(entry, '^(%-?%d+) (%d+) (.*)$')
  if holder == ARGV[2] then
    redis.call('HSET', KEYS[1], ARGV[1], ARGV[3] .. ' ' .. interrupts .. ' ' .. holder)
    return {holder, ARGV[3], interrupts}
  end
  if holder and tonumber(lapses) > tonumber(ARGV[4]) then
    return {holder, lapses, interrupts}
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3] .. ' 0 ' .. ARGV[2])
return {ARGV[2], ARGV[3], '0'}
