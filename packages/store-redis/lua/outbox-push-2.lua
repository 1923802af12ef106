--[[
  Appends an entry to the outbox. A status entry is also kept readable by message id until it
  is written (outbox-applied forgets it), unless the copy waiting there is one it may not
  replace: replicas push the statuses of one message in any order while PostgreSQL is away, and
  a replica's late `pending` must not hide another's final status. `replacesStatus` in Lua: not
  older, and never a non-final status over a final one (docs/design.md §5).

  KEYS[1] the outbox list
  KEYS[2] the waiting statuses ({<prefix>}:audit-outbox:statuses, HASH message id -> status JSON)
  ARGV[1] the entry (JSON line)
  ARGV[2] for a status entry: the message id; ARGV[3] the status JSON

  Returns the outbox length
]]
local function isFinal(status)
  return status.status ~= 'queued' and status.status ~= 'running' and status.delivery ~= 'pending'
end

local length = redis.call('RPUSH', KEYS[1], ARGV[1])
if ARGV[2] then
  local incoming = cjson.decode(ARGV[3])
  local waiting = redis.call('HGET', KEYS[2], ARGV[2])
  local stored = waiting and cjson.decode(waiting)
  if not stored or (incoming.updated_at >= stored.updated_at and (isFinal(incoming) or not isFinal(stored))) then
    redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
  end
end
return length
