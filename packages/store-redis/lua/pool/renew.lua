--[[
  One replica's heartbeat: extends the leases it still holds and its own entry among the live
  replicas (which `register` consults), removes the entries whose heartbeat lapsed (a dead
  replica leaves the set within a renewal period of its deadline), and reports the tokens it no longer holds (reclaimed by
  another replica after they expired, or settled longer ago than a tombstone lasts). A token
  whose lease a settlement released while its tombstone lasts is neither extended nor reported:
  the settlement was applied but its reply has not reached the replica, which writes it again
  (pool/includes/settlement). Purges expired tombstones, remembered enqueues and delivery keys
  (bounded), so that they go while nothing settles or enqueues too, and takes the pipelines with nothing ready
  nor waiting out of the set every claim loops over (a pipeline removed from the configuration
  would stay there for good; placing a message puts its pipeline back). Also reports the pool's
  runnable state, so that a replica whose wake-up on the
  channel was lost finds the work anyway. A renewal Redis applies after its replica's fencing
  deadline (ARGV[6], judged by TIME) renews the heartbeat only: every lease it names is reported
  lost. (One applied just before the deadline whose reply reaches the replica after it — a reply
  held up to a `WAIT`'s timeout, or by the network — still extends leases the replica gave up:
  their sessions wait one more lease.)
  A replica whose configuration is no longer the stored one (its heartbeat lapsed and a replica
  with other values registered meanwhile) is not renewed: it leaves the live replicas and is
  told so, and registers again or refuses work (docs/design.md §5 "Replicas agree").

  KEYS[1]  config     reads
  KEYS[2]  counts     reads
  KEYS[3]  sessions   unused
  KEYS[4]  placed     unused
  KEYS[5]  delayed    reads
  KEYS[6]  leases     reads, writes
  KEYS[7]  dedup      reads, writes
  KEYS[8]  replicas   writes
  KEYS[9]  seq        unused
  KEYS[10] pipelines  reads, writes
  KEYS[11] settled    reads, writes
  KEYS[12] enqueued   reads, writes
  KEYS[13] tenants    reads
  ARGV[1]  key prefix '{<prefix>}:', from which the per-item keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id
  ARGV[4]  lease duration, ms: the leases and the heartbeat last that long from now
  ARGV[5]  this replica's configuration fingerprint (as given to register), compared whole
  ARGV[6]  when the replica gives its turns up without a renewal (fencing), ms on Redis' clock
           (TIME), or '' when the caller's clock is not Redis' (no check): a renewal that lands
           later extends no lease, or the sessions of turns already given up would wait one
           more lease
  ARGV[7...] the lease tokens this replica holds

  Built from ARGV[1]:
    lease:<token>       reads
    ready:<pipeline>    reads
    waiting:<pipeline>  reads
    enqueued:<rid>      writes (deleted with its expired entry)

  Returns {claimable (0|1), nextDueAt (ms, -1 for none), {tokens no longer held}, live replicas},
    or {'config_mismatch', stored fingerprint}: nothing renewed, the replica left the live ones
]]
--- @include "pool/includes/preamble"
--- @include "pool/includes/runnable-state"
--- @include "pool/includes/tombstones"
--- @include "pool/includes/enqueue-tokens"
--- @include "includes/store-clock"

assertRegistered()

local stored = rcall('HGET', K.config, 'fingerprint')
if stored ~= ARGV[5] then
  rcall('ZREM', K.replicas, replica)
  return { 'config_mismatch', stored }
end

purgeExpired(K.settled, TOMBSTONE_PURGE_PER_CALL)
-- Enqueues purge delivery keys and remembered enqueues too, but traffic may stop: theirs go here.
purgeExpired(K.dedup, DEDUP_PURGE_PER_RENEWAL)
purgeEnqueued(ENQUEUED_PURGE_PER_RENEWAL)
local expiresAt = now + tonumber(ARGV[4])
rcall('ZREMRANGEBYSCORE', K.replicas, '-inf', now)
rcall('ZADD', K.replicas, expiresAt, replica)
local fenced = ARGV[6] ~= '' and storeNowMs() >= tonumber(ARGV[6])
local lost = {}
for index = 7, #ARGV do
  local token = ARGV[index]
  if not fenced and rcall('HGET', leaseKey(token), 'replica') == replica then
    rcall('ZADD', K.leases, 'XX', expiresAt, token)
  elseif not settled(token) then
    lost[#lost + 1] = token
  end
end
-- A copy: forgetPipeline takes entries out of the list as it goes.
for _, pipeline in ipairs({ unpack(pipelineList()) }) do
  if rcall('EXISTS', readyKey(pipeline), waitingKey(pipeline)) == 0 then
    forgetPipeline(pipeline)
  end
end
local state = runnableState(false, true)
return { state[1], state[2], lost, rcall('ZCARD', K.replicas) }
