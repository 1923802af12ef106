--[[
  Moves a drainer's processing list back to the head of the outbox (oldest first) and forgets
  the drainer: another replica's whose lease expired (it died holding a batch), or the caller's
  own at shutdown (deadline = a far future). Bounded: a processing list holds one batch.

  KEYS[1]  audit-outbox                       writes: the outbox list
  KEYS[2]  audit-outbox:processing:<replica>  reads, writes: the drainer's processing list
  KEYS[3]  audit-outbox:drainers              reads, writes: ZSET replica -> lease deadline, ms
  ARGV[1]  the drainer's replica id
  ARGV[2]  recover only if its lease ends before this (ms)

  Returns how many records went back, or -1 when the lease was renewed meanwhile (nothing moved)
]]
local deadline = redis.call('ZSCORE', KEYS[3], ARGV[1])
if deadline and tonumber(deadline) >= tonumber(ARGV[2]) then
  return -1
end
local moved = 0
while redis.call('LMOVE', KEYS[2], KEYS[1], 'RIGHT', 'LEFT') do
  moved = moved + 1
end
redis.call('ZREM', KEYS[3], ARGV[1])
return moved
