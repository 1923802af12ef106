--[[
  Settles a claim by removing its delivery (`delivered`, `failed` and `endAndClaim`,
  src/redis-reply-outbox.ts): when the token still holds the claim, deletes the delivery
  (remembering its id, with the token, for its rememberForMs, when it has one) and makes the
  chat's next delivery its head, waiting for its notBefore; keeps the outcomes the removal ends
  until they are recorded. A token that no longer holds (settled already, or taken back after its
  lease expired) changes nothing; it answers `settled` only to a repeat the caller flags (it never
  got the first call's reply) of a removal that ended the remembered id with this very token, so
  the messages of a removal Redis applied still get their outcome. When the caller asks for a
  claim, it then claims as reply-outbox/claim does (reply-outbox/includes/claim-next), whatever
  the settlement: a flagged repeat gets the delivery its claim token holds.

  KEYS[1]  reply-outbox:counts             writes
  KEYS[2]  reply-outbox:seq                unused
  KEYS[3]  reply-outbox:order:<channel>    writes
  KEYS[4]  reply-outbox:waiting:<channel>  reads, writes
  KEYS[5]  reply-outbox:ready:<channel>    reads, writes
  KEYS[6]  reply-outbox:leases:<channel>   reads, writes
  ARGV[1]  key prefix '{<prefix>}:reply-outbox:', from which the per-chat and per-delivery keys
           below are built
  ARGV[2]  channel
  ARGV[3]  instance id, in announcements
  ARGV[4]  delivery id
  ARGV[5]  claim token
  ARGV[6]  '1' when the caller repeats this call (same tokens) whose reply it never got, else '0'
  ARGV[7]  now, ms on the caller's clock, when the caller asks for a claim, else ''
  ARGV[8]  the next claim's token, made by the caller, or ''
  ARGV[9]  lease length, ms, or ''
  ARGV[10] the deployment's key base ('{<prefix>}:') of the kept outcomes
           (kept-outcomes/includes/keep-outcomes)
  ARGV[11] when another replica may record the outcomes kept below (ms), or '' when none are
  ARGV[12...] pairs of an outcome key and its JSON: the outcomes this removal ends, kept until
           recorded

  Built from ARGV[1]:
    d:<id>                 reads, writes
    token:<token>          reads, writes (the next claim's)
    chat:<channel>:<chat>  reads, writes
    ended:<id>             reads, writes
  Built from ARGV[10]:
    kept-outcomes      writes
    kept-outcomes:due  writes
  Publishes [instance, channel] on ARGV[1] .. 'due' when the chat gets a next head and no claim
  was asked for, or a due chat is left unclaimed after the claim.

  Returns {settlement, next, moreDue}
    settlement  'settled' or 'lost'
    next        {} when no claim was asked for or none was due, else {body, attempts, notBefore,
                lastError or ''} of the delivery leased to the next claim's token
    moreDue     without a claim: 1 when the chat may have a next delivery (announced), else 0;
                with one: 1 when a due chat is left unclaimed (announced), else 0
]]
--- @include "reply-outbox/includes/preamble"
--- @include "reply-outbox/includes/claim-next"
--- @include "kept-outcomes/includes/keep-outcomes"

local id = ARGV[4]
local token = ARGV[5]
local repeated = ARGV[6] == '1'
local now = tonumber(ARGV[7])

-- Removes the delivery `token` holds; returns the settlement and the chat's next head, if any.
local function removeHeld()
  local chat, rememberForMs = heldChat(id, token)
  if not chat then
    if repeated and rcall('GET', endedKey(id)) == token then
      return 'settled', false
    end
    return 'lost', false
  end
  releaseClaim(id, true)
  -- The claimed delivery is its chat's head.
  rcall('LPOP', chatKey(chat))
  rcall('DEL', deliveryKey(id))
  if rememberForMs then
    rcall('SET', endedKey(id), token, 'PX', rememberForMs)
  end
  rcall('ZREM', K.order, id)
  keepOutcomes(ARGV[10], ARGV[11], 12)
  -- A count at 0 stays: `pending()` leaves it out.
  rcall('HINCRBY', K.counts, channel, -1)
  return 'settled', placeHead(chat)
end

local settlement, nextHead = removeHeld()
if not now then
  -- The first call's announcement went to the other replicas only: a repeat looks again.
  if nextHead or (repeated and settlement == 'settled') then
    if nextHead then
      announce()
    end
    return { settlement, {}, 1 }
  end
  return { settlement, {}, 0 }
end
local head, moreDue = claimNext(now, ARGV[8], tonumber(ARGV[9]), repeated)
if moreDue then
  announce()
end
return { settlement, head and deliveryFields(head) or {}, moreDue and 1 or 0 }
