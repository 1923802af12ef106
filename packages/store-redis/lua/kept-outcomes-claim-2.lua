--[[
  Takes the kept outcomes whose time came (their settling replica did not forget them: it died,
  or their records failed) for the caller to record, oldest first, and makes each due again
  `leaseMs` later, so that no other replica takes it meanwhile and a caller that dies too leaves
  it to the next (includes/kept-outcomes).

  KEYS[1] the kept outcomes ({<prefix>}:kept-outcomes, HASH outcome key -> JSON)
  KEYS[2] when each may be recorded by another replica ({<prefix>}:kept-outcomes:due, ZSET)
  ARGV[1] now, ms on the caller's clock
  ARGV[2] leaseMs: how long a taken outcome stays the caller's
  ARGV[3] how many to take at most

  Returns {key, JSON, key, JSON, ...}
]]
local now = tonumber(ARGV[1])
local taken = {}
local keys = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
for _, key in ipairs(keys) do
  local json = redis.call('HGET', KEYS[1], key)
  if json then
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), key)
    taken[#taken + 1] = key
    taken[#taken + 1] = json
  else
    redis.call('ZREM', KEYS[2], key)
  end
end
return taken
