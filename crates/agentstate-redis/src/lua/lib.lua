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

-- Removes a session: its own keys and its entries in every list. For the scripts invoked with
-- `SessionKeys::removal`'s keys and first arguments (`erase.lua`, `sweep.lua`): KEYS 1-8 its own
-- keys, 9 sessions, 10 user's sessions, 11 users with this id, 12 expiring, 13 sessions by
-- creation, 14 user's sessions by creation; ARGV 1 list member, 2 session id, 3 user id.
local function remove_session()
  redis.call('DEL', unpack(KEYS, 1, 8))
  redis.call('ZREM', KEYS[9], ARGV[1])
  redis.call('ZREM', KEYS[10], ARGV[2])
  redis.call('ZREM', KEYS[13], ARGV[1])
  redis.call('ZREM', KEYS[14], ARGV[2])
  redis.call('SREM', KEYS[11], ARGV[3])
  redis.call('ZREM', KEYS[12], ARGV[1])
end
