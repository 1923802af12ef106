--[[
  The channel leases in force: read only. Bounded by the number of single-owner channels
  configured (a handful).

  KEYS[1]  channel-lease:holders    reads: HASH channel -> replica id
  KEYS[2]  channel-lease:epochs     reads: HASH channel -> epoch
  KEYS[3]  channel-lease:deadlines  reads: ZSET channel -> deadline, ms
  ARGV     none

  Returns a flat list {channel, holder, epoch, deadline (ms on Redis' clock), …}, by deadline
]]
--- @include "includes/store-clock"

local live = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. storeNowMs(), '+inf', 'WITHSCORES')
local result = {}
for i = 1, #live, 2 do
  local channel = live[i]
  local holder = redis.call('HGET', KEYS[1], channel)
  if holder then
    table.insert(result, channel)
    table.insert(result, holder)
    table.insert(result, tonumber(redis.call('HGET', KEYS[2], channel) or '0'))
    table.insert(result, tonumber(live[i + 1]))
  end
end
return result
