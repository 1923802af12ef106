--[[
  Abandons a claim: frees its slots and puts its messages back at the head of their session,
  runnable at once. A turn handed back without running does not count as an attempt, so that
  shutdowns alone never use up a message's attempts. A token that holds no lease changes nothing;
  it answers `settled` only to a flagged repeat of an abandon that was applied
  (pool/includes/settlement).

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
  ARGV[5]  '1' when repeating an abandon of this token whose reply never came, else '0'
  ARGV[6]  how long the tombstone lasts, ms
  ARGV[7]  '1' when the turn ran, '0' when it was handed back unrun

  Built from ARGV[1]:
    lease:<token>       reads, writes
    q:<session>         reads, writes
    m:<seq>             reads, writes
    waiting:<pipeline>  writes
    ready:<pipeline>    reads, writes
  Publishes this replica's id on ARGV[1] .. 'runnable' when a claim may succeed.

  Returns {'lost'} or {'settled', claimable (0|1), nextDueAt (ms, -1 for none), {}}
]]
--- @include "pool/includes/preamble"
--- @include "pool/includes/place-session"
--- @include "pool/includes/leases"
--- @include "pool/includes/runnable-state"
--- @include "pool/includes/tombstones"
--- @include "pool/includes/claim-turn"
--- @include "pool/includes/settlement"

assertRegistered()

local lease, reply = settleLease('abandon', heldLease(ARGV[4]), '')
if not lease then
  return reply
end
if ARGV[7] == '0' then
  for _, seq in ipairs(lease.seqs) do
    rcall('HINCRBY', messageKey(seq), 'attempt', -1)
  end
end
putBack(lease.session, lease.pipeline, lease.seqs, lease.running, lease.recorded)
return settledReply('')
