--[[
  A replica's wake timer came due: puts the messages of expired leases back at the head of their
  sessions and places the delayed sessions now due (both bounded), and tells the other replicas
  when a claim may now succeed.

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id

  Returns {claimable (0|1), nextDueAt (ms, -1 for none), reclaimed}
    reclaimed  {{token, session, pipeline, replica, {request ids}}...}: expired leases taken over
]]
--- @include "includes/pool"
--- @include "includes/place-session"
--- @include "includes/leases"
--- @include "includes/runnable-state"

assertRegistered()

local reclaimed = reclaimExpired()
promoteDue()
local state = runnableState(true)
return { state[1], state[2], reclaimed }
