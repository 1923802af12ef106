--[[
  Completes a claim: frees its slots and forgets its messages (their outcome is final). A token
  that holds no lease (settled already, or reclaimed after it expired) changes nothing.

  KEYS: the ten pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines)
  ARGV[1..3] key prefix, now (ms), replica id
  ARGV[4] lease token

  Returns {'lost'} or {'settled', claimable (0|1), nextDueAt (ms, -1 for none)}
]]
--- @include "includes/pool"
--- @include "includes/place-session"
--- @include "includes/leases"
--- @include "includes/runnable-state"

assertRegistered()

local lease = releaseLease(ARGV[4])
if not lease then
  return { 'lost' }
end
for _, seq in ipairs(lease.seqs) do
  rcall('DEL', messageKey(seq))
end
placeSession(lease.session)
local state = runnableState(true)
return { 'settled', state[1], state[2] }
