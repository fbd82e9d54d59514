-- Artifacts: helpers of the artifact scripts. An artifact is a hash {base}av:{user}:{session}:{name}
-- (n: the next version's number, p: the first version kept when retention removed older ones,
-- m:{v}: metadata JSON, d:{v}: payload); a session's names are a zset
-- {base}an:{user}:{session}, the user's sessions with artifacts a set {base}as:{user}. Names of
-- keys are escaped as keys.rs escapes them; `base` and `user` come escaped from the caller.
local function esc(part)
  return (string.gsub(part, '[%%:{}]', {['%'] = '%25', [':'] = '%3A', ['{'] = '%7B', ['}'] = '%7D'}))
end

-- The versions of every artifact of a session: counted, and removed when `remove` is set.
-- An artifact hash's next version number and its first kept one.
local function version_range(key)
  local counts = redis.call('HMGET', key, 'n', 'p')
  return tonumber(counts[1] or '0'), tonumber(counts[2] or '0')
end

-- How many versions an artifact hash holds.
local function kept_versions(key)
  local n, p = version_range(key)
  return n - p
end

local function session_artifacts(base, user, session, remove)
  local names_key = base .. 'an:' .. user .. ':' .. esc(session)
  local count = 0
  for _, name in ipairs(redis.call('ZRANGE', names_key, 0, -1)) do
    local key = base .. 'av:' .. user .. ':' .. esc(session) .. ':' .. esc(name)
    count = count + kept_versions(key)
    if remove then redis.call('DEL', key) end
  end
  if remove then
    redis.call('DEL', names_key)
    redis.call('SREM', base .. 'as:' .. user, session)
  end
  return count
end
