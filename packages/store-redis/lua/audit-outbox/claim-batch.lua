--[[
  One drain step of a replica: renews its drainer lease and hands it a batch. A batch stays in
  the replica's processing list until the replica trims what it wrote, so a batch it could not
  finish is handed to it again (and, if it dies, moved back by audit-outbox/recover-batch).

  KEYS[1]  audit-outbox                       reads, writes: the outbox list
  KEYS[2]  audit-outbox:processing:<replica>  reads, writes: this replica's processing list
  KEYS[3]  audit-outbox:drainers              reads, writes: ZSET replica -> lease deadline, ms
  ARGV[1]  batch size
  ARGV[2]  replica id
  ARGV[3]  lease deadline (ms)
  ARGV[4]  now (ms)
  ARGV[5]  at most this many expired drainers to report

  Returns {records of the processing list (oldest first), outbox length after the claim,
           ids of other replicas whose lease expired}
]]
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[2])
if redis.call('LLEN', KEYS[2]) == 0 then
  for _ = 1, tonumber(ARGV[1]) do
    if not redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') then break end
  end
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
return { redis.call('LRANGE', KEYS[2], 0, -1), redis.call('LLEN', KEYS[1]), expired }
