--[[
  Stores a delivery at the tail of its chat (src/redis-reply-outbox.ts); an id already stored
  changes nothing. A chat that was empty gets it as its head, waiting for its notBefore.

  KEYS[1]  reply-outbox:counts             writes
  KEYS[2]  reply-outbox:seq                writes
  KEYS[3]  reply-outbox:order:<channel>    writes
  KEYS[4]  reply-outbox:waiting:<channel>  writes
  KEYS[5]  reply-outbox:ready:<channel>    unused
  KEYS[6]  reply-outbox:leases:<channel>   unused
  ARGV[1]  key prefix '{<prefix>}:reply-outbox:', from which the per-chat and per-delivery keys
           below are built
  ARGV[2]  channel
  ARGV[3]  instance id, in announcements
  ARGV[4]  delivery id
  ARGV[5]  chat
  ARGV[6]  body: the Delivery JSON without attempts, notBefore and lastError
  ARGV[7]  attempts
  ARGV[8]  notBefore, ms
  ARGV[9]  lastError JSON, or ''
  ARGV[10] rememberForMs, or '': how long the id is remembered once the delivery ended

  Built from ARGV[1]:
    d:<id>                 reads, writes
    ended:<id>             reads
    chat:<channel>:<chat>  reads, writes
  Publishes [instance, channel] on ARGV[1] .. 'due' when the channel may have a claimable head.

  Returns 'added' (and announces the channel) or 'duplicate' (stored, or ended and remembered)
]]
--- @include "reply-outbox/includes/preamble"

local id, chat = ARGV[4], ARGV[5]
if rcall('EXISTS', deliveryKey(id), endedKey(id)) > 0 then
  return 'duplicate'
end
local seq = rcall('INCR', K.seq)
rcall('HSET', deliveryKey(id), 'body', ARGV[6], 'chat', chat, 'seq', seq, 'attempts', ARGV[7],
  'notBefore', ARGV[8], 'lastError', ARGV[9], 'rememberForMs', ARGV[10])
rcall('ZADD', K.order, seq, id)
rcall('HINCRBY', K.counts, channel, 1)
if rcall('RPUSH', chatKey(chat), id) == 1 then
  placeHead(chat, id, ARGV[8])
end
announce()
return 'added'
