--[[
  Forgets the statuses a drain step wrote to PostgreSQL from the readable copy of the statuses
  waiting in the outbox, each only if it is still the one written: a newer status of the same
  message, pushed meanwhile, stays readable until it is written too (docs/design.md §5).

  KEYS[1]  audit-outbox:statuses      reads, writes: HASH message id -> the status JSON waiting
  KEYS[2]  audit-outbox:status-ranks  writes: their ranks (see audit-outbox/push)
  ARGV[1]  a message id
  ARGV[2]  the status JSON written for it
  ARGV[3...] more such pairs

  Returns how many it forgot
]]
local forgotten = 0
for index = 1, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[index]) == ARGV[index + 1] then
    redis.call('HDEL', KEYS[1], ARGV[index])
    redis.call('HDEL', KEYS[2], ARGV[index])
    forgotten = forgotten + 1
  end
end
return forgotten
