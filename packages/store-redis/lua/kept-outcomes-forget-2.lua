--[[
  Forgets kept outcomes whose records are stored (includes/kept-outcomes), with how often they
  were taken (kept-outcomes-claim). A key kept no more (forgotten already, or never kept) changes
  nothing.

  KEYS[1] the kept outcomes ({<prefix>}:kept-outcomes, HASH outcome key -> JSON)
  KEYS[2] when each may be recorded by another replica ({<prefix>}:kept-outcomes:due, ZSET)
  ARGV[1] an outcome key; then more

  Built from KEYS[1]: KEYS[1]..':claims' (HASH outcome key -> how often it was taken).

  Returns how many it forgot
]]
local forgotten = redis.call('HDEL', KEYS[1], unpack(ARGV))
redis.call('ZREM', KEYS[2], unpack(ARGV))
redis.call('HDEL', KEYS[1] .. ':claims', unpack(ARGV))
return forgotten
