--[[
  Ends a session's handoff — with startedAt, only the one that began then — and answers it with
  its whole transcript, removing every key of it.

  KEYS[1]  handoff:<session>             reads, writes: HASH the handoff (src/redis-handoff-store.ts)
  KEYS[2]  handoff-transcript:<session>  reads, writes: LIST the entries' JSON, seq = position + 1
  KEYS[3]  handoff-ids:<session>         writes: SET message and reply ids written
  KEYS[4]  handoffs:inbox                writes: ZSET the inbox order (includes/inbox.lua)
  KEYS[5]  handoffs:active               writes: ZSET session -> activeAt, ms
  ARGV[1]  session
  ARGV[2]  startedAt (ms) the handoff must have begun at, '' for any
  ARGV[3]  activeAt (ms) the operator's last action must still be at, '' for any

  Returns {the handoff's HASH as {field, value, ...}, the entries' JSON in order}, or {} when
  the session is not in handoff (or its handoff began at another time, or was acted on since)
]]
--- @include "handoff/includes/inbox"
local session = ARGV[1]
local handoff = redis.call('HGETALL', KEYS[1])
if #handoff == 0 then
  return {}
end
local state = redis.call('HMGET', KEYS[1], 'waitingSince', 'startedAt', 'activeAt')
if ARGV[2] ~= '' and tonumber(state[2]) ~= tonumber(ARGV[2]) then
  return {}
end
if ARGV[3] ~= '' and tonumber(state[3]) ~= tonumber(ARGV[3]) then
  return {}
end
local entries = redis.call('LRANGE', KEYS[2], 0, -1)
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], inboxMember(state[1], state[2], session))
redis.call('ZREM', KEYS[5], session)
return { handoff, entries }
