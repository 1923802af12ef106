--[[
  Takes the kept outcomes whose time came (their settling replica did not forget them: it died,
  or their records failed) for the caller to record, oldest first, and makes each due again
  `leaseMs` later, so that no other replica takes it meanwhile and a caller that dies too leaves
  it to the next (kept-outcomes/includes/keep-outcomes). An outcome taken `maxClaims` times
  already was recorded by nobody each time (a record the database refuses for good): it moves to
  the dead kept outcomes instead, which keep the latest 1000, and is named in the reply.

  KEYS[1]  kept-outcomes      reads, writes: HASH outcome key -> JSON
  KEYS[2]  kept-outcomes:due  reads, writes: ZSET outcome key -> when another replica may record it
  ARGV[1]  now, ms on the caller's clock
  ARGV[2]  leaseMs: how long a taken outcome stays the caller's
  ARGV[3]  how many to take at most
  ARGV[4]  maxClaims: how often an outcome is taken before it is given up

  Built from KEYS[1], as the pool builds its per-item keys (same hash tag):
    kept-outcomes:claims  reads, writes: HASH outcome key -> how often it was taken
    kept-outcomes:dead    writes: LIST of JSON {key, outcome} given up, newest first, at most 1000

  Returns {{key, JSON, key, JSON, ...}, {given-up key, ...}}
]]
local now = tonumber(ARGV[1])
local maxClaims = tonumber(ARGV[4])
local claims = KEYS[1] .. ':claims'
local dead = KEYS[1] .. ':dead'
local taken = {}
local givenUp = {}
local keys = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
for _, key in ipairs(keys) do
  local json = redis.call('HGET', KEYS[1], key)
  if not json then
    redis.call('ZREM', KEYS[2], key)
    redis.call('HDEL', claims, key)
  elseif tonumber(redis.call('HINCRBY', claims, key, 1)) > maxClaims then
    redis.call('LPUSH', dead, cjson.encode({ key = key, outcome = json }))
    redis.call('LTRIM', dead, 0, 999)
    redis.call('HDEL', KEYS[1], key)
    redis.call('ZREM', KEYS[2], key)
    redis.call('HDEL', claims, key)
    givenUp[#givenUp + 1] = key
  else
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), key)
    taken[#taken + 1] = key
    taken[#taken + 1] = json
  end
end
return { taken, givenUp }
