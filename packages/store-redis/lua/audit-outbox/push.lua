--[[
  Appends an entry to the outbox. A status entry is also kept readable by message id until it
  is written (audit-outbox/forget-written forgets it), unless the copy waiting there is one it
  may not replace: replicas push the statuses of one message in any order while PostgreSQL is away, and
  a replica's late `pending` must not hide another's final status. This is `replacesStatus`
  (a version not lower, and never a non-final status over a final one) on each copy's rank,
  kept beside it, so that no status JSON is decoded here (cjson refuses a lone surrogate JSON
  may carry). The version comes from the message's life (core statusVersion), never a clock.

  KEYS[1]  audit-outbox               writes: the outbox list
  KEYS[2]  audit-outbox:statuses      writes: HASH message id -> the status JSON waiting
  KEYS[3]  audit-outbox:status-ranks  reads, writes: HASH message id -> the rank of that copy,
           '<version> <1 when final, else 0>', written and forgotten with it
  ARGV[1]  the entry (JSON line)
  ARGV[2]  for a status entry: the message id
  ARGV[3]  the status JSON
  ARGV[4]  its version (statusVersion, an integer below 2^53)
  ARGV[5]  '1' when it is final (isFinalStatus), else '0'

  Returns the outbox length
]]
local length = redis.call('RPUSH', KEYS[1], ARGV[1])
local id = ARGV[2]
if not id then
  return length
end
local rank = redis.call('HGET', KEYS[3], id)
if rank then
  local version, final = string.match(rank, '^(%S+) ([01])$')
  if tonumber(ARGV[4]) < tonumber(version) or (final == '1' and ARGV[5] == '0') then
    return length
  end
end
redis.call('HSET', KEYS[2], id, ARGV[3])
redis.call('HSET', KEYS[3], id, ARGV[4] .. ' ' .. ARGV[5])
return length
