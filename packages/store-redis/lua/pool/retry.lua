--[[
  Retries a claim: frees its slots and puts its messages back at the head of their session,
  runnable `delay` from now (each keeps its attempt count and age), except the messages listed
  as final: they are forgotten, as by complete, and their outcomes kept until recorded. A token
  that holds no lease changes nothing; it answers `settled` only to a flagged repeat of a retry
  that was applied (pool/includes/settlement).

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
  ARGV[5]  '1' when repeating a retry of this token whose reply never came, else '0'
  ARGV[6]  how long the tombstone lasts, ms
  ARGV[7]  lease token of the caller's next turn, claimed in the same step, or '' to claim none
  ARGV[8]  that lease's duration, ms
  ARGV[9]  delay, ms
  ARGV[10] when another replica may record the outcomes kept below (ms), or '' when none are
  ARGV[11] how many messages' outcome is final: n
  ARGV[12..11+n] their ids
  ARGV[12+n...] pairs of an outcome key and its JSON: their outcomes, kept until recorded
           (kept-outcomes/includes/keep-outcomes)

  Built from ARGV[1]:
    lease:<token>       reads, writes
    q:<session>         reads, writes
    m:<seq>             reads, writes
    id:<message id>     reads, writes
    waiting:<pipeline>  writes
    ready:<pipeline>    reads, writes
    kept-outcomes       writes (kept-outcomes/includes/keep-outcomes)
    kept-outcomes:due   writes
  Publishes this replica's id on ARGV[1] .. 'runnable' when a claim may succeed and the caller
  claims nothing (ARGV[7] '').

  Returns {'lost'} or {'settled', claimable (0|1), nextDueAt (ms, -1 for none), turn}
    turn  the caller's next turn ({} for none), as claim answers it (pool/includes/claim-turn);
          it may hold the retried messages again when their delay is 0
]]
--- @include "pool/includes/preamble"
--- @include "pool/includes/place-session"
--- @include "pool/includes/leases"
--- @include "pool/includes/runnable-state"
--- @include "pool/includes/tombstones"
--- @include "pool/includes/claim-turn"
--- @include "pool/includes/settlement"
--- @include "kept-outcomes/includes/keep-outcomes"

-- A next claim looks at every pipeline: their policies are read with the limits.
assertRegistered(ARGV[7] ~= '' and pipelineList() or nil)

local lease, reply = settleLease('retry', heldLease(ARGV[4]), ARGV[7])
if not lease then
  return reply
end
local retryAt = now + tonumber(ARGV[9])
local finalCount = tonumber(ARGV[11])
local final = {}
for index = 12, 11 + finalCount do
  final[ARGV[index]] = true
end
local retried = {}
for index, seq in ipairs(lease.seqs) do
  local known = lease.messages[index]
  if final[known and known[1] or rcall('HGET', messageKey(seq), 'id')] then
    forgetMessage(seq, known, lease.pipeline)
  else
    rcall('HSET', messageKey(seq), 'retryAt', retryAt)
    retried[#retried + 1] = seq
  end
end
putBack(lease.session, lease.pipeline, retried, lease.running, lease.recorded)
keepOutcomes(prefix, ARGV[10], 12 + finalCount)
return settledReply(ARGV[7], ARGV[8])
