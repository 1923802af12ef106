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
                              was free: setting it announces `wanted` (replicas give back what
                              they hold unused), the next permits given back announce `freed`
  ARGV[1]  replica id
  ARGV[2]  permits in use by the replica (turns running and claims under way): never given back
  ARGV[3]  permits the replica asks to hold: fewer than held gives the rest back, more takes
           what the limit leaves free
  ARGV[4]  how long the hold lasts without another call (ms)
  ARGV[5]  the global limit
  ARGV[6]  '1' when the replica leaves (holds nothing, is no longer listed)
  ARGV[7]  the channel of the announcements (`wanted`, `freed`)

  Returns {held, lapsed, free}: `free` is what the limit leaves to nobody after this call;
  `lapsed` is 1 when the replica uses more permits than it holds and
  the limit cannot grant them again (its hold lapsed and others took them): its turns run beyond
  the limit, it must give them up.
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
local inUse, asked, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
-- The permits the other replicas hold.
local others = 0
local holds = rcall('HGETALL', KEYS[1])
for index = 1, #holds, 2 do
  if holds[index] ~= replica then
    others = others + tonumber(holds[index + 1])
  end
end
local held = current
local lapsed = 0
if current < inUse and ARGV[6] ~= '1' then
  -- The replica uses permits it does not hold (its hold lapsed, or a failover lost it): granted
  -- again while the limit leaves them free, else its turns run beyond the limit.
  if others + inUse <= limit then
    held = inUse
  else
    lapsed = 1
  end
end
if ARGV[6] == '1' then
  held = 0
elseif asked < held then
  held = math.max(asked, inUse)
elseif asked > held and lapsed == 0 then
  local granted = math.max(0, math.min(asked - held, limit - others - held))
  -- The first replica left short asks the others for the permits they hold unused.
  if granted < asked - held and rcall('SET', KEYS[3], '1', 'NX') then
    rcall('PUBLISH', ARGV[7], 'wanted')
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
  rcall('PUBLISH', ARGV[7], 'freed')
end
return { held, lapsed, math.max(0, limit - others - held) }
