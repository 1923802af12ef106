--[[
  Abandons a claim: frees its slots and puts its messages back at the head of their session,
  runnable at once. A turn handed back without running does not count as an attempt, so that
  shutdowns alone never use up a message's attempts. A token that holds no lease changes nothing;
  it answers `settled` only to a flagged repeat of an abandon that was applied
  (includes/settlement).

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id
  ARGV[4] lease token
  ARGV[5] '1' when repeating an abandon of this token whose reply never came, else '0'
  ARGV[6] how long the tombstone lasts, ms
  ARGV[7] '1' when the turn ran, '0' when it was handed back unrun

  Returns {'lost'} or {'settled', claimable (0|1), nextDueAt (ms, -1 for none)}
]]
--- @include "includes/pool"
--- @include "includes/place-session"
--- @include "includes/leases"
--- @include "includes/runnable-state"
--- @include "includes/tombstones"
--- @include "includes/settlement"

assertRegistered()

local lease, reply = settleLease('abandon')
if not lease then
  return reply
end
if ARGV[7] == '0' then
  for _, seq in ipairs(lease.seqs) do
    rcall('HINCRBY', messageKey(seq), 'attempt', -1)
  end
end
putBack(lease.session, lease.pipeline, lease.seqs)
local state = runnableState(true)
return { 'settled', state[1], state[2] }
