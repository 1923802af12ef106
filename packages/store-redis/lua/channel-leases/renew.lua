--[[
  Extends a channel's lease if the caller still holds it with the same epoch and it has not
  expired. An expired lease is not revived even when nobody took it over: its holder has stopped
  the connection by then (fencing), and must acquire it again with a new epoch.

  KEYS[1]  channel-lease:holders    reads: HASH channel -> replica id
  KEYS[2]  channel-lease:epochs     reads: HASH channel -> epoch
  KEYS[3]  channel-lease:deadlines  reads, writes: ZSET channel -> deadline, ms
  ARGV[1]  channel id
  ARGV[2]  holder (replica id)
  ARGV[3]  epoch
  ARGV[4]  lease length (ms)

  Returns the new deadline (ms on Redis' clock), or 0 when the lease was lost
]]
--- @include "channel-leases/includes/holds-lease"
--- @include "includes/store-clock"

local now = storeNowMs()
if not holdsChannelLease(ARGV[1], ARGV[2], ARGV[3], now) then
  return 0
end
local deadline = now + tonumber(ARGV[4])
redis.call('ZADD', KEYS[3], deadline, ARGV[1])
return deadline
