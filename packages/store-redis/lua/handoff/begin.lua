--[[
  Begins a session's handoff unless one is in force, which is kept as it is.

  KEYS[1]  handoff:<session>             reads, writes: HASH the handoff (src/redis-handoff-store.ts)
  KEYS[2]  handoff-transcript:<session>  unused: LIST the entries' JSON, seq = position + 1
  KEYS[3]  handoff-ids:<session>         unused: SET message and reply ids written
  KEYS[4]  handoffs:inbox                writes: ZSET the inbox order (includes/inbox.lua)
  KEYS[5]  handoffs:active               writes: ZSET session -> activeAt, ms
  ARGV[1]  session
  ARGV[2]  at (ms, the caller's clock)
  ARGV[3]  reason
  ARGV[4]  by
  ARGV[5]  pipeline, '' when not known
  ARGV[6]  origin: the message's JSON without its raw event, '' when none
  ARGV[7]  tenant of the session's messages

  Returns {created (1, or 0 when one was in force), the handoff's HASH as field, value, ...}
]]
--- @include "handoff/includes/inbox"
local session, at = ARGV[1], ARGV[2]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return { 0, redis.call('HGETALL', KEYS[1]) }
end
redis.call('HSET', KEYS[1], 'tenant', ARGV[7], 'reason', ARGV[3], 'by', ARGV[4], 'startedAt', at,
  'activeAt', at, 'held', 0, 'unread', 0, 'lastSeq', 0)
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'pipeline', ARGV[5]) end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'origin', ARGV[6]) end
redis.call('ZADD', KEYS[4], 0, inboxMember(false, at, session))
redis.call('ZADD', KEYS[5], at, session)
return { 1, redis.call('HGETALL', KEYS[1]) }
