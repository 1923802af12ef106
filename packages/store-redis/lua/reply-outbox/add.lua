--[[
  Adds a delivery at the tail of its chat (src/redis-reply-outbox.ts,
  reply-outbox/includes/add-delivery); an id already stored or remembered changes nothing. A chat
  that was empty gets it as its head, waiting for its notBefore. When the caller asks for a claim
  (it can send one of the channel's deliveries now), the delivery is leased to the caller's token
  at once if it can leave now; otherwise the caller gets the claim reply-outbox/claim would make.

  KEYS[1]  reply-outbox:counts             writes
  KEYS[2]  reply-outbox:seq                writes
  KEYS[3]  reply-outbox:order:<channel>    writes
  KEYS[4]  reply-outbox:waiting:<channel>  reads, writes
  KEYS[5]  reply-outbox:ready:<channel>    reads, writes
  KEYS[6]  reply-outbox:leases:<channel>   writes
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
  ARGV[11] now, ms on the caller's clock, when the caller asks for a claim, else ''
  ARGV[12] claim token, made by the caller, or ''
  ARGV[13] lease length, ms, or ''

  Built from ARGV[1]:
    d:<id>                 reads, writes
    ended:<id>             reads
    chat:<channel>:<chat>  reads, writes
    token:<token>          writes (a claim of another delivery: one of the delivery added has
                           none, its id finds it, reply-outbox/includes/add-delivery)
  Publishes [instance, channel] on ARGV[1] .. 'due' when the delivery became a head the caller
  did not claim, or a due chat is left unclaimed.

  Returns {result, claimed, moreDue}
    result   'added' or 'duplicate' (stored, or ended and remembered)
    claimed  1 when the added delivery is leased to the token; {body, attempts, notBefore,
             lastError or ''} of another delivery leased to it; 0 for none
    moreDue  with a claim: 1 when a due chat is left unclaimed (announced), else 0; without
             one: 1 when the delivery became its chat's head (announced), else 0
]]
--- @include "reply-outbox/includes/preamble"
--- @include "reply-outbox/includes/claim-next"
--- @include "reply-outbox/includes/add-delivery"

local delivery, claim = addedArgs(4)
local placed = addDelivery(prefix, channel, delivery, claim)
if placed == 'duplicate' or placed == 'claimed' or not claim then
  local reply = addedReply(placed)
  if reply[3] == 1 then
    announce()
  end
  return reply
end
local head, moreDue = claimNext(claim.now, claim.token, claim.leaseMs, false)
if moreDue then
  announce()
end
return { 'added', head and deliveryFields(head) or 0, moreDue and 1 or 0 }
