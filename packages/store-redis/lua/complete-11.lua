--[[
  Completes a claim: frees its slots and forgets its messages (their outcome is final), keeping
  their outcomes until recorded (includes/kept-outcomes). A token
  that holds no lease (settled already, or reclaimed after it expired) changes nothing; it
  answers `settled` only to a flagged repeat of a complete that was applied (includes/settlement).

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id
  ARGV[4] lease token
  ARGV[5] '1' when repeating a complete of this token whose reply never came, else '0'
  ARGV[6] how long the tombstone lasts, ms
  ARGV[7] when another replica may record the outcomes kept below (ms), or '' when none are
  ARGV[8...] pairs of an outcome key and its JSON: the outcomes this complete ends, kept until
          recorded (includes/kept-outcomes)

  Returns {'lost'} or {'settled', claimable (0|1), nextDueAt (ms, -1 for none)}
]]
--- @include "includes/pool"
--- @include "includes/place-session"
--- @include "includes/leases"
--- @include "includes/runnable-state"
--- @include "includes/tombstones"
--- @include "includes/settlement"
--- @include "includes/kept-outcomes"

assertRegistered()

local lease, reply = settleLease('complete')
if not lease then
  return reply
end
for _, seq in ipairs(lease.seqs) do
  forgetMessage(seq)
end
keepOutcomes(prefix, ARGV[7], 8)
placeSession(lease.session)
local state = runnableState(true)
return { 'settled', state[1], state[2] }
