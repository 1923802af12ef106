--[[
  A replica's wake timer came due: puts the messages of expired leases back at the head of their
  sessions and places the delayed sessions now due (both bounded), and tells the other replicas
  when a claim may now succeed.

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
  KEYS[11] settled    unused
  KEYS[12] enqueued   unused
  KEYS[13] tenants    reads, writes
  ARGV[1]  key prefix '{<prefix>}:', from which the per-item keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id

  Built from ARGV[1]:
    lease:<token>       reads, writes
    q:<session>         reads, writes
    m:<seq>             reads
    waiting:<pipeline>  writes
    ready:<pipeline>    reads, writes
  Publishes this replica's id on ARGV[1] .. 'runnable' when a claim may succeed.

  Returns {claimable (0|1), nextDueAt (ms, -1 for none), reclaimed}
    reclaimed  {{token, session, pipeline, replica, {request ids}}...}: expired leases taken over
]]
--- @include "pool/includes/preamble"
--- @include "pool/includes/place-session"
--- @include "pool/includes/leases"
--- @include "pool/includes/runnable-state"

assertRegistered()

local reclaimed = reclaimExpired()
promoteDue()
local state = runnableState(true, true)
return { state[1], state[2], reclaimed }
