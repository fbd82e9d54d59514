-- Helpers every script is prefixed with (see scripts.rs). Each takes the keys it touches as
-- arguments, so the scripts still declare every key they use.

-- The values of `ids` in the hash `data`, in order, the missing ones skipped; HMGET in chunks of
-- a thousand (unpack's stack limit).
local function values_of(data, ids)
  local values = {}
  local i = 1
  while i <= #ids do
    local upto = math.min(i + 999, #ids)
    local chunk = redis.call('HMGET', data, unpack(ids, i, upto))
    for j = 1, #chunk do
      if chunk[j] then values[#values + 1] = chunk[j] end
    end
    i = upto + 1
  end
  return values
end

-- Keys a session owns expire with it: each of `...` gets the session's expire time (from its
-- meta hash), if it has one.
local function expire_with_session(meta, ...)
  local expire = redis.call('HGET', meta, 'expire')
  if expire then
    local at = math.ceil(tonumber(expire) / 1000)
    for _, key in ipairs({...}) do
      redis.call('PEXPIREAT', key, at)
    end
  end
end
