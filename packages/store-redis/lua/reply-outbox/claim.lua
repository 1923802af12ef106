--[[
  Claims the channel's due chat whose head was added first (src/redis-reply-outbox.ts,
  reply-outbox/includes/claim-next): first takes back expired leases and moves the due chats to
  `ready`, then leases the oldest ready head to the caller's token until now + leaseMs. A
  repeated token that holds a claim already (the caller repeats a claim whose reply it never got)
  answers that delivery, leased again until now + leaseMs — the caller sends it from now on — and
  claims nothing more.

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
  ARGV[7]  '1' when the caller repeats a claim with this token whose reply it never got, else '0'
  ARGV[8]  with a repeat: the id of the delivery the first call may have leased to the token
           when the caller knows it (an add's claim of the delivery it stored), else ''

  Built from ARGV[1]:
    token:<token>          reads, writes
    d:<id>                 reads, writes
    chat:<channel>:<chat>  reads
  Publishes [instance, channel] on ARGV[1] .. 'due' when a due chat is left unclaimed.

  Returns {reclaimed, delivery, moreDue}
    reclaimed  {{id, chat}...}: expired leases taken back
    delivery   {} when no chat is due, else {body, attempts, notBefore, lastError or ''}
    moreDue    1 when another due chat is left unclaimed (announced), else 0
]]
--- @include "reply-outbox/includes/preamble"
--- @include "reply-outbox/includes/claim-next"

local heldId = ARGV[8] ~= '' and ARGV[8] or nil
local head, moreDue, reclaimed = claimNext(tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]), ARGV[7] == '1', heldId)
if moreDue then
  announce()
end
return { reclaimed, head and deliveryFields(head) or {}, moreDue and 1 or 0 }
