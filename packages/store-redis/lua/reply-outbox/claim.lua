--[[
  Claims the channel's due chat whose head was added first (src/redis-reply-outbox.ts). First
  takes back expired leases (their instance stopped or lost Redis: the heads go back among the
  unclaimed chats, attempts unchanged) and moves the chats whose head is due by `now` from
  `waiting` to `ready`, both bounded; then pops the ready chat with the oldest head and leases
  the head to the caller's token until now + leaseMs. A token that holds a claim already (the
  caller repeats a claim whose reply it never got) answers that delivery, leased again until
  now + leaseMs — the caller sends it from now on — and claims nothing more.

  KEYS[1]  reply-outbox:counts             unused
  KEYS[2]  reply-outbox:seq                unused
  KEYS[3]  reply-outbox:order:<channel>    unused
  KEYS[4]  reply-outbox:waiting:<channel>  reads, writes
  KEYS[5]  reply-outbox:ready:<channel>    reads, writes
  KEYS[6]  reply-outbox:leases:<channel>   reads, writes
  ARGV[1]  key prefix '{<prefix>}:reply-outbox:', from which the per-chat and per-delivery keys
           below are built
  ARGV[2]  channel
  ARGV[3]  instance id, in announcements
  ARGV[4]  now, ms on the caller's clock
  ARGV[5]  claim token, made by the caller, unique per claim
  ARGV[6]  lease length, ms

  Built from ARGV[1]:
    token:<token>          reads, writes
    d:<id>                 reads, writes
    chat:<channel>:<chat>  reads
  Publishes [instance, channel] on ARGV[1] .. 'due' after taking back expired leases.

  Returns {reclaimed, delivery}
    reclaimed  {{id, chat}...}: expired leases taken back (and announced)
    delivery   {} when no chat is due, else {body, attempts, notBefore, lastError or ''}
]]
--- @include "reply-outbox/includes/preamble"

-- Bounds of one call's work, so that no call scans the backlog: past them, the next call goes on.
local RECLAIM_PER_CALL = 10
local PROMOTE_PER_CALL = 100

local now = tonumber(ARGV[4])
local token = ARGV[5]

local repeated = rcall('GET', tokenKey(token))
if repeated then
  rcall('ZADD', K.leases, 'XX', now + tonumber(ARGV[6]), repeated)
  return { {}, deliveryFields(repeated) }
end

local reclaimed = {}
for _, id in ipairs(rcall('ZRANGEBYSCORE', K.leases, '-inf', now, 'LIMIT', 0, RECLAIM_PER_CALL)) do
  local fields = rcall('HMGET', deliveryKey(id), 'chat', 'token')
  local chat = fields[1]
  releaseClaim(id, fields[2])
  if chat then
    placeHead(chat)
    reclaimed[#reclaimed + 1] = { id, chat }
  end
end
if #reclaimed > 0 then
  announce()
end

-- The heads of the chats promoted here, by chat: the claim below need not read them again.
local promoted = {}
local due = rcall('ZRANGEBYSCORE', K.waiting, '-inf', now, 'LIMIT', 0, PROMOTE_PER_CALL)
if #due > 0 then
  rcall('ZREM', K.waiting, unpack(due))
end
for _, chat in ipairs(due) do
  local head = rcall('LINDEX', chatKey(chat), 0)
  if head then
    rcall('ZADD', K.ready, rcall('HGET', deliveryKey(head), 'seq'), chat)
    promoted[chat] = head
  end
end

local top = rcall('ZPOPMIN', K.ready)
local head = top[1] and (promoted[top[1]] or rcall('LINDEX', chatKey(top[1]), 0))
if not head then
  return { reclaimed, {} }
end
rcall('HSET', deliveryKey(head), 'token', token)
rcall('SET', tokenKey(token), head)
rcall('ZADD', K.leases, now + tonumber(ARGV[6]), head)
return { reclaimed, deliveryFields(head) }
