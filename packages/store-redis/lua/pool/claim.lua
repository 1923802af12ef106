--[[
  Claims the runnable turn whose head is oldest (docs/design.md §2 "Query pool", §5). First puts
  the messages of expired leases back at the head of their sessions and places the delayed
  sessions now due (both bounded), then takes the session, pipeline and global slots at once
  (pool/includes/claim-turn). A claim repeated with a token that holds a lease (its reply was
  lost) answers that same turn and takes no second slot.

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
  ARGV[4]  lease token, made by the caller, unique per claim
  ARGV[5]  lease duration, ms
  ARGV[6]  '1' when the token repeats a claim (or a claim in a step) whose reply never came, else
           '0': only a repeated token may hold a lease already, and only then is it looked up

  Built from ARGV[1]:
    lease:<token>       reads, writes (its tenant too, while tenants compete)
    q:<session>         reads, writes
    m:<seq>             reads, writes
    waiting:<pipeline>  writes
    ready:<pipeline>    reads, writes
  Publishes this replica's id on ARGV[1] .. 'runnable' when a claim may succeed after reclaiming
  expired leases.

  Returns {claimable (0|1), nextDueAt (ms, -1 for none), reclaimed, turn}
    claimable  after this claim: whether another may succeed now
    reclaimed  {{token, session, pipeline, replica, {request ids}}...}: expired leases taken over
    turn       {} when nothing may run, else
               {token, session, pipeline, expiresAt, {{payload, attempt, retryAt or '', acceptedAt}...}}
               (pool/includes/claim-turn)
]]
--- @include "pool/includes/preamble"
--- @include "pool/includes/place-session"
--- @include "pool/includes/leases"
--- @include "pool/includes/runnable-state"
--- @include "pool/includes/claim-turn"

-- The policies of every pipeline a claim may look at, read with the limits.
assertRegistered(pipelineList())

local token = ARGV[4]
local leaseMs = tonumber(ARGV[5])
local repeated = ARGV[6] == '1'

if repeated and rcall('EXISTS', leaseKey(token)) == 1 then
  local state = runnableState(false, true)
  return { state[1], state[2], {}, turnOf(token) }
end

local reclaimed = reclaimExpired()
promoteDue()
-- Looked up above when repeated: the claim looks no further (pool/includes/claim-turn).
local turn = claimTurn(token, leaseMs, false) or {}
local state = runnableState(#reclaimed > 0, true)
return { state[1], state[2], reclaimed, turn }
