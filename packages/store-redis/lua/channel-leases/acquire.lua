--[[
  Takes a channel's lease for a holder unless another holder's is still in force, always with
  the next epoch (the fencing token), which survives releases because the epochs hash is never
  trimmed. A holder acquiring its own live lease gets a new epoch too: it asks only once it gave
  the lease up (fenced), and a renewal that landed after that must not hand the old epoch back.

  KEYS[1]  channel-lease:holders    reads, writes: HASH channel -> replica id
  KEYS[2]  channel-lease:epochs     reads, writes: HASH channel -> epoch
  KEYS[3]  channel-lease:deadlines  reads, writes: ZSET channel -> deadline, ms
  ARGV[1]  channel id
  ARGV[2]  holder (replica id)
  ARGV[3]  lease length (ms)

  Returns {holder, epoch, deadline} of the lease in force after the call (deadline in ms on
  Redis' clock): the caller's own when it got it, else the other holder's (nothing changed)
]]
--- @include "includes/store-clock"

local channel, holder, now = ARGV[1], ARGV[2], storeNowMs()
local current = redis.call('HGET', KEYS[1], channel)
local deadline = tonumber(redis.call('ZSCORE', KEYS[3], channel) or '0')
local live = current and deadline > now
if live and current ~= holder then
  return { current, tonumber(redis.call('HGET', KEYS[2], channel) or '0'), deadline }
end
local epoch = redis.call('HINCRBY', KEYS[2], channel, 1)
redis.call('HSET', KEYS[1], channel, holder)
deadline = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[3], deadline, channel)
return { holder, epoch, deadline }
