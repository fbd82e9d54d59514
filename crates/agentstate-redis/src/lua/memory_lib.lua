-- Helpers of the memory scripts. An owner's (app, user) memories live under `base` =
-- '{prefix}{app}:' and `user` = the escaped user id:
--   base..'mo:'..user            zset   member by create time (µs): the order of a listing
--   base..'md:'..user            hash   member → the memory's JSON (as the service wrote it)
--   base..'mt:'..user            hash   member → its terms, space-separated
--   base..'mx:'..user            hash   member → its expire time (µs), when it expires
--   base..'ms:'..user..':'..src  set    the members of a source (a session; '' for none)
--   base..'mn:'..user..':'..id   set    the members with an id (one per source)
--   base..'mw:'..id              set    '{escaped user}\0{user}' of the users with a memory of
--                                       that id (a memory named by its id alone)
--   base..'mz:'..user..':'..term zset   the members indexed under a term by create time (the
--                                       inverted index; newest hits of a term without reading all)
--   base..'mdel:'..user          set    the ids the owner deleted
--   base..'memx'                 zset   "{user}\0{member}" by expire time, for the sweep
--   base..'mu'                   zset   the (raw) users holding memories, all scored 0 (in byte order)
-- A member is '{escaped source}\0{escaped id}', so every key of it can be named from it.

local function member_parts(member)
  local cut = string.find(member, '\0', 1, true)
  return string.sub(member, 1, cut - 1), string.sub(member, cut + 1)
end

-- The index zset of a term. Earlier versions kept a term's members in a set under 'mi:'; the
-- first script to use the term moves them over (scored from the order zset) and drops the set.
local function term_index(base, user, term)
  local key = base .. 'mz:' .. user .. ':' .. term
  local legacy = base .. 'mi:' .. user .. ':' .. term
  if redis.call('EXISTS', legacy) == 1 then
    for _, member in ipairs(redis.call('SMEMBERS', legacy)) do
      local create = redis.call('ZSCORE', base .. 'mo:' .. user, member)
      if create then redis.call('ZADD', key, create, member) end
    end
    redis.call('DEL', legacy)
  end
  return key
end

local function words(text)
  local found = {}
  for word in string.gmatch(text or '', '%S+') do found[#found + 1] = word end
  return found
end

-- Removes one memory with its index entries.
local function unindex(base, user, raw_user, member)
  local o = base .. 'mo:' .. user
  local src, id = member_parts(member)
  for _, term in ipairs(words(redis.call('HGET', base .. 'mt:' .. user, member))) do
    redis.call('ZREM', term_index(base, user, term), member)
  end
  redis.call('HDEL', base .. 'mt:' .. user, member)
  redis.call('HDEL', base .. 'mx:' .. user, member)
  redis.call('HDEL', base .. 'md:' .. user, member)
  redis.call('ZREM', o, member)
  if redis.call('ZCARD', o) == 0 then redis.call('ZREM', base .. 'mu', raw_user) end
  redis.call('SREM', base .. 'ms:' .. user .. ':' .. src, member)
  redis.call('SREM', base .. 'mn:' .. user .. ':' .. id, member)
  if redis.call('EXISTS', base .. 'mn:' .. user .. ':' .. id) == 0 then
    redis.call('SREM', base .. 'mw:' .. id, user .. '\0' .. raw_user)
  end
  redis.call('ZREM', base .. 'memx', raw_user .. '\0' .. member)
end

local function live(base, user, member, now)
  local expire = redis.call('HGET', base .. 'mx:' .. user, member)
  return not expire or tonumber(expire) > now
end
