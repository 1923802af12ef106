--[[
  Gives a channel's lease up at once if the caller still holds it with the same epoch, so that
  another replica may acquire it without waiting for the deadline. The epoch stays.

  KEYS[1]  channel-lease:holders    reads, writes: HASH channel -> replica id
  KEYS[2]  channel-lease:epochs     reads: HASH channel -> epoch
  KEYS[3]  channel-lease:deadlines  reads, writes: ZSET channel -> deadline, ms
  ARGV[1]  channel id
  ARGV[2]  holder (replica id)
  ARGV[3]  epoch

  Returns 1 when released, 0 when the caller no longer held it
]]
--- @include "channel-leases/includes/holds-lease"
--- @include "includes/store-clock"

if not holdsChannelLease(ARGV[1], ARGV[2], ARGV[3], storeNowMs()) then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
