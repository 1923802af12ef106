--[[
  Appends an operator's reply to a session's transcript while it is in handoff: nothing is
  unread any more and idleness counts from the reply. A reply id is written once.

  KEYS[1]  handoff:<session>             reads, writes: HASH the handoff (src/redis-handoff-store.ts)
  KEYS[2]  handoff-transcript:<session>  reads, writes: LIST the entries' JSON, seq = position + 1
  KEYS[3]  handoff-ids:<session>         reads, writes: SET message and reply ids written
  KEYS[4]  handoffs:inbox                writes: ZSET the inbox order (includes/inbox.lua)
  KEYS[5]  handoffs:active               writes: ZSET session -> activeAt, ms
  ARGV[1]  session
  ARGV[2]  at (ms, the caller's clock)
  ARGV[3]  maxEntries: operator replies written at most
  ARGV[4]  the reply's id
  ARGV[5]  the entry's JSON without its seq

  Returns the handoff's HASH before the reply as {field, value, ...} (a repeated id writes
  nothing), or 'not_in_handoff' or 'full'
]]
--- @include "handoff/includes/inbox"
local session, at = ARGV[1], ARGV[2]
local before = redis.call('HGETALL', KEYS[1])
if #before == 0 then
  return 'not_in_handoff'
end
if redis.call('SISMEMBER', KEYS[3], ARGV[4]) == 1 then
  return before
end
local written = redis.call('LLEN', KEYS[2])
-- Replies have a room of their own beside the user's messages, so a user cannot fill it.
if written - tonumber(redis.call('HGET', KEYS[1], 'held')) >= tonumber(ARGV[3]) then
  return 'full'
end
redis.call('RPUSH', KEYS[2], ARGV[5])
redis.call('SADD', KEYS[3], ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'waitingSince', 'startedAt')
if state[1] then
  redis.call('ZREM', KEYS[4], inboxMember(state[1], state[2], session))
  redis.call('ZADD', KEYS[4], 0, inboxMember(false, state[2], session))
  redis.call('HDEL', KEYS[1], 'waitingSince')
end
redis.call('HSET', KEYS[1], 'unread', 0, 'activeAt', at, 'lastSeq', written + 1)
redis.call('ZADD', KEYS[5], at, session)
return before
