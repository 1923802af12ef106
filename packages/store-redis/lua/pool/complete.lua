--[[
  Completes a claim: frees its slots and forgets its messages (their outcome is final), keeping
  their outcomes until recorded (kept-outcomes/includes/keep-outcomes), and stores the turn's
  answer in the reply outbox when the caller gives one (reply-outbox/includes/add-delivery), so
  that the answer is stored exactly when the turn completes. A token that holds no lease (settled
  already, or reclaimed after it expired) changes nothing and stores nothing; it answers
  `settled` only to a flagged repeat of a complete that was applied (pool/includes/settlement),
  whose first call stored the answer.

  KEYS[1]  config     reads
  KEYS[2]  counts     reads, writes
  KEYS[3]  sessions   reads, writes
  KEYS[4]  placed     reads, writes
  KEYS[5]  delayed    reads, writes
  KEYS[6]  leases     reads, writes
  KEYS[7]  dedup      unused
  KEYS[8]  replicas   unused
  KEYS[9]  seq        unused
  KEYS[10] pipelines  reads, writes
  KEYS[11] settled    reads, writes
  KEYS[12] enqueued   unused
  KEYS[13] tenants    reads, writes
  ARGV[1]  key prefix '{<prefix>}:', from which the per-item keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id
  ARGV[4]  lease token
  ARGV[5]  '1' when repeating a complete of this token whose reply never came, else '0'
  ARGV[6]  how long the tombstone lasts, ms
  ARGV[7]  lease token of the caller's next turn, claimed in the same step, or '' to claim none
  ARGV[8]  that lease's duration, ms
  ARGV[9]  when another replica may record the outcomes kept below (ms), or '' when none are
  ARGV[10] the reply outbox's key prefix '{<prefix>}:reply-outbox:' (the pool's hash tag), or ''
           when the complete stores no answer (ARGV[11..22] unused then)
  ARGV[11] channel of the delivery
  ARGV[12] the outbox's instance id, in its announcements
  ARGV[13..22] the delivery and its claim, as reply-outbox/add's ARGV[4..13]: id, chat, body,
           attempts, notBefore, lastError, rememberForMs; now on the outbox's clock when the
           caller claims the delivery for its sender (else ''), claim token, lease length
  ARGV[23...] pairs of an outcome key and its JSON: the outcomes this complete ends, kept until
           recorded (kept-outcomes/includes/keep-outcomes)

  Built from ARGV[1]:
    lease:<token>      reads, writes
    q:<session>        reads
    m:<seq>            reads, writes
    id:<message id>    reads, writes
    ready:<pipeline>   reads, writes
    kept-outcomes      writes (kept-outcomes/includes/keep-outcomes)
    kept-outcomes:due  writes
  Built from ARGV[10] (reply-outbox/includes/add-delivery, reply-outbox/includes/preamble):
    counts, seq, order:<channel>, waiting:<channel>, ready:<channel>, leases:<channel>,
    d:<id>, ended:<id>, chat:<channel>:<chat>
  Publishes this replica's id on ARGV[1] .. 'runnable' when a claim may succeed and the caller
  claims nothing (ARGV[7] ''). Publishes [ARGV[12], channel] on ARGV[10] .. 'due' when the
  delivery became its chat's head and was not claimed.

  Returns {'lost'} or {'settled', claimable (0|1), nextDueAt (ms, -1 for none), turn, added}
    turn   the caller's next turn ({} for none), as claim answers it (pool/includes/claim-turn)
    added  with an answer stored (ARGV[10]), and not for a repeat answered from the first call's
           tombstone: {result, claimed, moreDue}
             result   'added' or 'duplicate' (its id stored, or ended and remembered)
             claimed  1 when the delivery is leased to the claim token, else 0 (no other
                      delivery is claimed here)
             moreDue  1 when the delivery became its chat's head unclaimed (announced), else 0
]]
--- @include "pool/includes/preamble"
--- @include "pool/includes/place-session"
--- @include "pool/includes/leases"
--- @include "pool/includes/runnable-state"
--- @include "pool/includes/tombstones"
--- @include "pool/includes/claim-turn"
--- @include "pool/includes/settlement"
--- @include "kept-outcomes/includes/keep-outcomes"
--- @include "reply-outbox/includes/add-delivery"
--- @include "reply-outbox/includes/announce-due"

-- Stores the answer ARGV[10..22] give, if any; returns the `added` reply, or nil for none.
local function addAnswer()
  local outbox = ARGV[10] ~= '' and ARGV[10]
  if not outbox then
    return nil
  end
  local reply = addedReply(addDelivery(outbox, ARGV[11], addedArgs(13)))
  if reply[3] == 1 then
    announceDue(outbox, ARGV[11], ARGV[12])
  end
  return reply
end

-- A next claim looks at every pipeline: their policies are read with the limits.
assertRegistered(ARGV[7] ~= '' and pipelineList() or nil)

-- The answer is stored before the pool's first write: Redis keeps what a script wrote before a
-- command of it failed, so an add that fails (a key of the wrong type; on a cluster, a slot
-- moving) leaves the lease held and the pool as it was, and the complete can be made again.
local held = heldLease(ARGV[4])
local added = held and addAnswer()
local lease, reply = settleLease('complete', held, ARGV[7])
if not lease then
  return reply
end
for index, seq in ipairs(lease.seqs) do
  forgetMessage(seq, lease.messages[index], lease.pipeline)
end
keepOutcomes(prefix, ARGV[9], 23)
placeSession(lease.session, { running = lease.running, headFirst = true })
local settled = settledReply(ARGV[7], ARGV[8])
settled[5] = added
return settled
