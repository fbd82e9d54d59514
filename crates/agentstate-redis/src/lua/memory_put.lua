-- Stores memories of one source: 'replace' removes the source's others and rewrites those it
-- holds (keeping their create time); 'add' leaves out those it holds; 'rewrite' rewrites those it
-- holds and leaves out the others. Ids the owner deleted are left out. Answers how many were stored ('add') or how many the source holds now ('replace').
-- KEYS: 1 the owner's order zset (routes the script to its node; every key shares its slot)
-- ARGV: 1 base, 2 escaped user, 3 user, 4 mode, 5 escaped source,
--       then per memory: escaped id, id, JSON, create (µs), expire (µs or ''), terms
local base, user, raw_user, mode, src = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local sources = base .. 'ms:' .. user .. ':' .. src
local deleted = base .. 'mdel:' .. user
local given = {}
for i = 6, #ARGV, 6 do given[src .. '\0' .. ARGV[i]] = true end
if mode == 'replace' then
  for _, member in ipairs(redis.call('SMEMBERS', sources)) do
    if not given[member] then unindex(base, user, raw_user, member) end
  end
end
local stored = 0
for i = 6, #ARGV, 6 do
  local member, id = src .. '\0' .. ARGV[i], ARGV[i + 1]
  local create = ARGV[i + 3]
  local skip = redis.call('SISMEMBER', deleted, id) == 1
  if not skip then
    local held = redis.call('ZSCORE', base .. 'mo:' .. user, member)
    if held then
      if mode == 'add' then
        skip = true
      else
        create = held
        unindex(base, user, raw_user, member)
      end
    elseif mode == 'rewrite' then
      skip = true
    end
  end
  if not skip then
    redis.call('ZADD', base .. 'mo:' .. user, create, member)
    redis.call('ZADD', base .. 'mu', 0, raw_user)
    redis.call('HSET', base .. 'md:' .. user, member, ARGV[i + 2])
    redis.call('HSET', base .. 'mt:' .. user, member, ARGV[i + 5])
    for _, term in ipairs(words(ARGV[i + 5])) do
      redis.call('ZADD', term_index(base, user, term), create, member)
    end
    if ARGV[i + 4] ~= '' then
      redis.call('HSET', base .. 'mx:' .. user, member, ARGV[i + 4])
      redis.call('ZADD', base .. 'memx', ARGV[i + 4], raw_user .. '\0' .. member)
    end
    redis.call('SADD', sources, member)
    redis.call('SADD', base .. 'mn:' .. user .. ':' .. ARGV[i], member)
    redis.call('SADD', base .. 'mw:' .. ARGV[i], user .. '\0' .. raw_user)
    stored = stored + 1
  end
end
if mode == 'replace' then return redis.call('SCARD', sources) end
return stored
