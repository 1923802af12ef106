--[[
  Settles a claim by removing its delivery (`delivered` and `failed`, src/redis-reply-outbox.ts):
  when the token still holds the claim, deletes the delivery (remembering its id, with the token,
  for its rememberForMs, when it has one) and makes the chat's next delivery its head, waiting
  for its notBefore; keeps the outcomes the removal ends until they are recorded. A token that
  no longer holds (settled already, or taken back after its lease expired) changes nothing; it
  answers `settled` only to a repeat the caller flags (it never got the first call's reply) of a
  removal that ended the remembered id with this very token, so the messages of a removal Redis
  applied still get their outcome.

  KEYS[1]  reply-outbox:counts             reads, writes
  KEYS[2]  reply-outbox:seq                unused
  KEYS[3]  reply-outbox:order:<channel>    writes
  KEYS[4]  reply-outbox:waiting:<channel>  writes
  KEYS[5]  reply-outbox:ready:<channel>    unused
  KEYS[6]  reply-outbox:leases:<channel>   writes
  ARGV[1]  key prefix '{<prefix>}:reply-outbox:', from which the per-chat and per-delivery keys
           below are built
  ARGV[2]  channel
  ARGV[3]  instance id, in announcements
  ARGV[4]  delivery id
  ARGV[5]  claim token
  ARGV[6]  '1' when the caller repeats a removal with this token whose reply it never got, else '0'
  ARGV[7]  the deployment's key base ('{<prefix>}:') of the kept outcomes
           (kept-outcomes/includes/keep-outcomes)
  ARGV[8]  when another replica may record the outcomes kept below (ms), or '' when none are
  ARGV[9...] pairs of an outcome key and its JSON: the outcomes this removal ends, kept until
           recorded

  Built from ARGV[1]:
    d:<id>                 reads, writes
    token:<token>          writes
    chat:<channel>:<chat>  reads, writes
    ended:<id>             reads, writes
  Built from ARGV[7]:
    kept-outcomes      writes
    kept-outcomes:due  writes
  Publishes [instance, channel] on ARGV[1] .. 'due' when the channel may have a claimable head.

  Returns {'lost'} or {'settled', 1 when the chat may have a next delivery (announced) else 0}
]]
--- @include "reply-outbox/includes/preamble"
--- @include "kept-outcomes/includes/keep-outcomes"

local id = ARGV[4]
local token = ARGV[5]
local chat, rememberForMs = heldChat(id, token)
if not chat then
  -- The first call's announcement went to the other replicas only: the caller looks again.
  if ARGV[6] == '1' and rcall('GET', endedKey(id)) == token then
    return { 'settled', 1 }
  end
  return { 'lost' }
end
releaseClaim(id, token, true)
-- The claimed delivery is the chat's head: LREM stops at the first element.
rcall('LREM', chatKey(chat), 1, id)
rcall('DEL', deliveryKey(id))
if rememberForMs then
  rcall('SET', endedKey(id), token, 'PX', rememberForMs)
end
rcall('ZREM', K.order, id)
keepOutcomes(ARGV[7], ARGV[8], 9)
if rcall('HINCRBY', K.counts, channel, -1) <= 0 then
  rcall('HDEL', K.counts, channel)
end
if placeHead(chat) then
  announce()
  return { 'settled', 1 }
end
return { 'settled', 0 }
