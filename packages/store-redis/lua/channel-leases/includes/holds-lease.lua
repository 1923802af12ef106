--[[
  Channel leases (docs/design.md §5 "Single-owner connections"): KEYS[1] holders, KEYS[2]
  epochs, KEYS[3] deadlines, as every channel-lease script declares them.
]]

-- Whether `holder` holds `channel`'s lease with `epoch` (a string, as ARGV carries it) and it
-- has not expired at `now` (ms on Redis' clock).
local function holdsChannelLease(channel, holder, epoch, now)
  return redis.call('HGET', KEYS[1], channel) == holder
    and redis.call('HGET', KEYS[2], channel) == epoch
    and tonumber(redis.call('ZSCORE', KEYS[3], channel) or '0') > now
end
