-- Sets a session's display name and/or labels on its metadata; 0 if there is no such session.
-- KEYS: 1 meta
-- ARGV: 1 '1' to set the display name, 2 the name ('' to clear), 3 '1' to set the labels,
--       4 the labels JSON ('' to clear), 5 the time expiry is judged at (µs, '' for not judged):
--       a session expired then is not there
local expire = redis.call('HGET', KEYS[1], 'expire')
if redis.call('EXISTS', KEYS[1]) == 0 or (ARGV[5] ~= '' and expire and tonumber(expire) <= tonumber(ARGV[5])) then
  return 0
end
for _, field in ipairs({{'name', 1}, {'labels', 3}}) do
  local name, at = field[1], field[2]
  if ARGV[at] == '1' then
    if ARGV[at + 1] == '' then
      redis.call('HDEL', KEYS[1], name)
    else
      redis.call('HSET', KEYS[1], name, ARGV[at + 1])
    end
  end
end
return 1
