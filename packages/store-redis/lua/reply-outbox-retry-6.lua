--[[
  Settles a claim whose send failed (src/redis-reply-outbox.ts): when the token still holds the
  claim, the delivery stays its chat's head with one attempt more and `lastError`, waiting until
  `notBefore`. Not announced: the sender keeps its own timer for due times. A token that no
  longer holds changes nothing.

  KEYS: the six reply-outbox keys of includes/reply-outbox (counts, seq, order, waiting, ready,
        leases)
  ARGV[1..3] key prefix, channel, instance id
  ARGV[4] delivery id
  ARGV[5] claim token
  ARGV[6] notBefore, ms on the caller's clock
  ARGV[7] lastError JSON

  Returns 'settled' or 'lost'
]]
--- @include "includes/reply-outbox"

local id = ARGV[4]
local chat = heldChat(id, ARGV[5])
if not chat then
  return 'lost'
end
releaseClaim(id)
rcall('HINCRBY', deliveryKey(id), 'attempts', 1)
rcall('HSET', deliveryKey(id), 'notBefore', ARGV[6], 'lastError', ARGV[7])
rcall('ZADD', K.waiting, ARGV[6], chat)
return 'settled'
