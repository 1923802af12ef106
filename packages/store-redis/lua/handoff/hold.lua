--[[
  Appends user messages to a session's transcript while it is in handoff, each id once (also
  within the call); the last written becomes the origin. Writes none of them when they would
  take the transcript past maxEntries.

  KEYS[1]  handoff:<session>             reads, writes: HASH the handoff (src/redis-handoff-store.ts)
  KEYS[2]  handoff-transcript:<session>  reads, writes: LIST the entries' JSON, seq = position + 1
  KEYS[3]  handoff-ids:<session>         reads, writes: SET message and reply ids written
  KEYS[4]  handoffs:inbox                writes: ZSET the inbox order (includes/inbox.lua)
  KEYS[5]  handoffs:active               unused: ZSET session -> activeAt, ms
  ARGV[1]  session
  ARGV[2]  at (ms, the caller's clock), an integer
  ARGV[3]  pipeline the messages were routed to, '' to keep the handoff's
  ARGV[4]  maxEntries: user messages held at most
  ARGV[5...] pairs: a message's id, its JSON without its raw event

  Returns 'held', 'not_in_handoff' or 'full'
]]
--- @include "handoff/includes/inbox"
local session, at, pipeline, maxEntries = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 'not_in_handoff'
end
local fresh, seen = {}, {}
for index = 5, #ARGV, 2 do
  local id = ARGV[index]
  if not seen[id] and redis.call('SISMEMBER', KEYS[3], id) == 0 then
    seen[id] = true
    fresh[#fresh + 1] = index
  end
end
if #fresh == 0 then
  return 'held'
end
local written = redis.call('LLEN', KEYS[2])
-- The bound is on the user's messages: replies have a room of their own (reply.lua).
if tonumber(redis.call('HGET', KEYS[1], 'held')) + #fresh > maxEntries then
  return 'full'
end
for _, index in ipairs(fresh) do
  redis.call('RPUSH', KEYS[2], '{"at":' .. at .. ',"from":"user","message":' .. ARGV[index + 1] .. '}')
  redis.call('SADD', KEYS[3], ARGV[index])
end
local state = redis.call('HMGET', KEYS[1], 'waitingSince', 'startedAt')
if not state[1] then
  redis.call('ZREM', KEYS[4], inboxMember(false, state[2], session))
  redis.call('ZADD', KEYS[4], 0, inboxMember(at, state[2], session))
  redis.call('HSET', KEYS[1], 'waitingSince', at)
end
redis.call('HSET', KEYS[1], 'origin', ARGV[fresh[#fresh] + 1], 'lastSeq', written + #fresh)
redis.call('HINCRBY', KEYS[1], 'held', #fresh)
redis.call('HINCRBY', KEYS[1], 'unread', #fresh)
if pipeline ~= '' then redis.call('HSET', KEYS[1], 'pipeline', pipeline) end
return 'held'
