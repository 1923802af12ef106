--[[
  Extends a channel's lease if the caller still holds it with the same epoch and it has not
  expired. An expired lease is not revived even when nobody took it over: its holder has stopped
  the connection by then (fencing), and must acquire it again with a new epoch.

  KEYS[1] holders (HASH channel → replica id)
  KEYS[2] epochs (HASH channel → epoch)
  KEYS[3] deadlines (ZSET channel → deadline, ms)
  ARGV[1] channel id
  ARGV[2] holder (replica id)
  ARGV[3] epoch
  ARGV[4] now (ms, the caller's clock)
  ARGV[5] lease length (ms)

  Returns the new deadline (ms), or 0 when the lease was lost
]]
local channel, now = ARGV[1], tonumber(ARGV[4])
if redis.call('HGET', KEYS[1], channel) ~= ARGV[2]
  or redis.call('HGET', KEYS[2], channel) ~= ARGV[3]
  or tonumber(redis.call('ZSCORE', KEYS[3], channel) or '0') <= now then
  return 0
end
local deadline = now + tonumber(ARGV[5])
redis.call('ZADD', KEYS[3], deadline, channel)
return deadline
