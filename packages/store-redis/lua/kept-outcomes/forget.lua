--[[
  Forgets kept outcomes whose records are stored (kept-outcomes/includes/keep-outcomes), with
  how often they were taken (kept-outcomes/claim). A key kept no more (forgotten already, or
  never kept) changes nothing.

  KEYS[1]  kept-outcomes      writes: HASH outcome key -> JSON
  KEYS[2]  kept-outcomes:due  writes: ZSET outcome key -> when another replica may record it
  ARGV[1]  an outcome key
  ARGV[2...] more

  Built from KEYS[1]:
    kept-outcomes:claims  writes

  Returns how many it forgot
]]
local forgotten = redis.call('HDEL', KEYS[1], unpack(ARGV))
redis.call('ZREM', KEYS[2], unpack(ARGV))
redis.call('HDEL', KEYS[1] .. ':claims', unpack(ARGV))
return forgotten
