--[[
  Settles a claim whose send failed (src/redis-reply-outbox.ts): when the token still holds the
  claim, the delivery stays its chat's head with one attempt more and `lastError`, waiting until
  `notBefore`. Not announced: it comes due later, found by the senders' poll (every second) or
  by a claim made then. A token that no longer holds changes nothing.

  KEYS[1]  reply-outbox:counts             unused
  KEYS[2]  reply-outbox:seq                unused
  KEYS[3]  reply-outbox:order:<channel>    unused
  KEYS[4]  reply-outbox:waiting:<channel>  writes
  KEYS[5]  reply-outbox:ready:<channel>    unused
  KEYS[6]  reply-outbox:leases:<channel>   writes
  ARGV[1]  key prefix '{<prefix>}:reply-outbox:', from which the per-chat and per-delivery keys
           below are built
  ARGV[2]  channel
  ARGV[3]  instance id, in announcements
  ARGV[4]  delivery id
  ARGV[5]  claim token
  ARGV[6]  notBefore, ms on the caller's clock
  ARGV[7]  lastError JSON
  ARGV[8]  attempts now: one more than the claim handed out (its holder alone changes them)

  Built from ARGV[1]:
    d:<id>  reads, writes

  Returns 'settled' or 'lost'
]]
--- @include "reply-outbox/includes/preamble"

local id = ARGV[4]
local chat = heldChat(id, ARGV[5])
if not chat then
  return 'lost'
end
releaseClaim(id)
rcall('HSET', deliveryKey(id), 'attempts', ARGV[8], 'notBefore', ARGV[6], 'lastError', ARGV[7])
rcall('ZADD', K.waiting, ARGV[6], chat)
return 'settled'
