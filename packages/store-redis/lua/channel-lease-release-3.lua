--[[
  Gives a channel's lease up at once if the caller still holds it with the same epoch, so that
  another replica may acquire it without waiting for the deadline. The epoch stays.

  KEYS[1] holders (HASH channel → replica id)
  KEYS[2] epochs (HASH channel → epoch)
  KEYS[3] deadlines (ZSET channel → deadline, ms)
  ARGV[1] channel id
  ARGV[2] holder (replica id)
  ARGV[3] epoch
  ARGV[4] now (ms, the caller's clock)

  Returns 1 when released, 0 when the caller no longer held it
]]
local channel = ARGV[1]
if redis.call('HGET', KEYS[1], channel) ~= ARGV[2]
  or redis.call('HGET', KEYS[2], channel) ~= ARGV[3]
  or tonumber(redis.call('ZSCORE', KEYS[3], channel) or '0') <= tonumber(ARGV[4]) then
  return 0
end
redis.call('HDEL', KEYS[1], channel)
redis.call('ZREM', KEYS[3], channel)
return 1
