--[[
  What the reply outbox's scripts share (src/redis-reply-outbox.ts, docs/design.md §5 "Several
  replicas"). Every script works on one channel and takes that channel's keys, in the order
  of src/reply-outbox-keys.ts; all keys share the deployment's hash tag.

  KEYS (one channel's):
    KEYS[1] counts   HASH   channel -> deliveries stored (claimed ones included)
    KEYS[2] seq      STRING add counter: a delivery's place in add order
    KEYS[3] order    ZSET   the channel's delivery ids, scored by seq
    KEYS[4] waiting  ZSET   chats whose head is neither claimed nor known due, scored by the
                            head's notBefore (the claim script moves the due ones to `ready`)
    KEYS[5] ready    ZSET   chats whose head is due and not claimed, scored by the head's seq
    KEYS[6] leases   ZSET   ids of claimed deliveries, scored by their lease deadline

  ARGV[1] key prefix ('{<prefix>}:reply-outbox:') for the per-chat and per-delivery keys:
          chat:<channel>:<chat> LIST of the chat's delivery ids in add order (channel ids have
          no ':'), d:<id> HASH of one delivery: body (the Delivery JSON without attempts,
          notBefore and lastError), chat, seq, attempts, notBefore, lastError (JSON or ''),
          rememberForMs (ms or ''), and token while it is claimed; token:<token> STRING the id a
          claim made by `claim` or a removal holds, expiring with its lease (a repeat checks the
          delivery's token: a key that outlived its claim names nothing); ended:<id> STRING the token of the claim that ended a
          delivery whose id is remembered, expiring after its rememberForMs
  ARGV[2] channel
  ARGV[3] the calling instance's id, in announcements

  A chat with deliveries is in exactly one place: `waiting`, `ready`, or claimed (its head has a
  token and is in `leases`). Times are the caller's (the claim's `now`, a retry's `notBefore`);
  no script reads Redis TIME.
]]
--- @include "reply-outbox/includes/announce-due"
local rcall = redis.call
local K = {
  counts = KEYS[1],
  seq = KEYS[2],
  order = KEYS[3],
  waiting = KEYS[4],
  ready = KEYS[5],
  leases = KEYS[6],
}
local prefix = ARGV[1]
local channel = ARGV[2]
local instance = ARGV[3]

local function chatKey(chat)
  return prefix .. 'chat:' .. channel .. ':' .. chat
end
local function deliveryKey(id)
  return prefix .. 'd:' .. id
end
local function endedKey(id)
  return prefix .. 'ended:' .. id
end
local function tokenKey(token)
  return prefix .. 'token:' .. token
end

-- Puts the chat's head, if it has one, among the unclaimed chats until its notBefore; returns
-- its id, or false when the chat is empty. `head` and its `notBefore`: when the caller knows
-- them (it just added the chat's only delivery), else nil and they are read.
local function placeHead(chat, head, notBefore)
  head = head or rcall('LINDEX', chatKey(chat), 0)
  if head then
    rcall('ZADD', K.waiting, notBefore or rcall('HGET', deliveryKey(head), 'notBefore'), chat)
  end
  return head
end

-- Tells the other instances that the channel may have a claimable head.
local function announce()
  announceDue(prefix, channel, instance)
end

-- The chat of delivery `id` and its rememberForMs (ms, or nil) when `token` still holds its
-- claim, else nil.
local function heldChat(id, token)
  local fields = rcall('HMGET', deliveryKey(id), 'token', 'chat', 'rememberForMs')
  if fields[1] == token then
    return fields[2], tonumber(fields[3])
  end
  return nil
end

-- Ends the claim on delivery `id`: its token and its lease go (the token key expires on its
-- own). `deleting`: the caller deletes the delivery, its token with it.
local function releaseClaim(id, deleting)
  if not deleting then
    rcall('HDEL', deliveryKey(id), 'token')
  end
  rcall('ZREM', K.leases, id)
end

-- The fields a delivery is handed out with.
local function deliveryFields(id)
  return rcall('HMGET', deliveryKey(id), 'body', 'attempts', 'notBefore', 'lastError')
end
