-- Counts, and with ARGV[4] = '1' removes, the artifacts of one session of a user (ARGV[3] set)
-- or of every session of the user and its user-scoped ones (ARGV[3] = false, passed as '\0').
-- KEYS: 1 the user's sessions with artifacts (routes the script; every key shares its slot)
-- ARGV: 1 base, 2 escaped user, 3 session or '\0', 4 '1' to remove
local base, user, session, remove = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1'
if session ~= '\0' then return session_artifacts(base, user, session, remove) end
local count = 0
for _, each in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  count = count + session_artifacts(base, user, each, remove)
end
return count
