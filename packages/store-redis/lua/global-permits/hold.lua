--[[
  The global concurrency limit shared by the partitions of a pool (docs/design.md §5
  "Partitions"): each replica holds permits, one per turn it runs or claims, in this one slot; a
  claim in any partition needs a free permit of the replica's own, so the turns running in the
  whole fleet never exceed the limit. One call renews the replica's hold and moves it towards the
  number it asks for (idempotent: a call repeated after a lost reply changes nothing more); a hold
  lapses `ARGV[4]` ms after the replica's last call (Redis' clock) and its permits go back.

  KEYS[1]  permits:held       reads, writes: HASH replica -> permits held (absent: none)
  KEYS[2]  permits:deadlines  reads, writes: ZSET replica -> when its hold lapses, ms
  KEYS[3]  permits:short      reads, writes: STRING, set while a replica asked for more than
                              was free: the next permits given back are announced
  ARGV[1]  replica id
  ARGV[2]  permits in use by the replica (turns running and claims under way): never given back
  ARGV[3]  permits the replica asks to hold: fewer than held gives the rest back, more takes
           what the limit leaves free
  ARGV[4]  how long the hold lasts without another call (ms)
  ARGV[5]  the global limit
  ARGV[6]  '1' when the replica leaves (holds nothing, is no longer listed)
  ARGV[7]  the channel on which permits given back while one was short are announced

  Returns {held, lapsed}: `lapsed` is 1 when the replica holds fewer permits than it uses (its
  hold lapsed and went back): its turns run beyond the limit, it must give them up.
]]
--- @include "includes/store-clock"

local rcall = redis.call
local now = storeNowMs()
local replica = ARGV[1]
local freed = false
-- Lapsed holds go back first; replicas are few, so a bounded sweep suffices.
for _, gone in ipairs(rcall('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 100)) do
  freed = rcall('HDEL', KEYS[1], gone) == 1 or freed
  rcall('ZREM', KEYS[2], gone)
end
local current = tonumber(rcall('HGET', KEYS[1], replica) or 0)
local inUse, asked = tonumber(ARGV[2]), tonumber(ARGV[3])
local lapsed = current < inUse and 1 or 0
local held = current
if ARGV[6] == '1' then
  held = 0
elseif asked < held then
  held = math.max(asked, inUse)
elseif asked > held and lapsed == 0 then
  local total = 0
  for _, count in ipairs(rcall('HVALS', KEYS[1])) do
    total = total + tonumber(count)
  end
  local granted = math.max(0, math.min(asked - held, tonumber(ARGV[5]) - total))
  if granted < asked - held then
    rcall('SET', KEYS[3], '1')
  end
  held = held + granted
end
freed = freed or held < current
if held > 0 then
  rcall('HSET', KEYS[1], replica, held)
else
  rcall('HDEL', KEYS[1], replica)
end
if ARGV[6] == '1' then
  rcall('ZREM', KEYS[2], replica)
else
  rcall('ZADD', KEYS[2], now + tonumber(ARGV[4]), replica)
end
if freed and rcall('DEL', KEYS[3]) == 1 then
  rcall('PUBLISH', ARGV[7], '1')
end
return { held, lapsed }
