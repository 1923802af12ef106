--[[
  Accepts a message in one step: delivery dedup, the max_pending bound, the per-session cap
  (dropping the session's oldest waiting messages), the push and the session's placement
  (docs/design.md §2 "Query pool"). A refused enqueue marks no delivery key. An accepted one is
  remembered by its request id for ARGV[17] ms: repeated with it (its reply was lost), the
  script answers what it answered then and queues nothing (pool/includes/enqueue-tokens).

  KEYS[1]  config     reads
  KEYS[2]  counts     reads, writes
  KEYS[3]  sessions   reads, writes
  KEYS[4]  placed     reads, writes
  KEYS[5]  delayed    reads, writes
  KEYS[6]  leases     reads
  KEYS[7]  dedup      reads, writes
  KEYS[8]  replicas   unused
  KEYS[9]  seq        writes
  KEYS[10] pipelines  reads, writes
  KEYS[11] settled    unused
  KEYS[12] enqueued   reads, writes
  KEYS[13] tenants    reads, writes (while tenants compete, or a dropped message was counted)
  ARGV[1]  key prefix '{<prefix>}:', from which the per-item keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id
  ARGV[4]  the QueuedMessage JSON without `attempt`, `retryAtMs` and `acceptedAt` (kept as fields
           beside it; acceptedAt is this call's `now`, so that the debounce and max_wait of one
           burst run on the pool's clock whichever replica accepted each message)
  ARGV[5]  message id
  ARGV[6]  request id (`requestIdOf`), from which turn ids are made; also the enqueue's token
  ARGV[7]  session key
  ARGV[8]  pipeline id
  ARGV[9]  sender id (a debounce run is one sender's)
  ARGV[10] attempt
  ARGV[11] retryAtMs, or '' for none
  ARGV[12] delivery key, or '' for none
  ARGV[13] when the delivery key expires, ms on the caller's clock
  ARGV[14] '1' for a last delivery: kept past max_pending
  ARGV[15] the channel that accepted it (`channels[].id`), which `locate` names
  ARGV[16] when another replica may record the outcome of a message dropped from the full session
           (ms), or '' to keep none: each is kept until recorded under `m:<request id>:dropped`
           (kept-outcomes/includes/keep-outcomes)
  ARGV[17] how long an accepted enqueue is remembered by its request id, ms (longer than its
           caller may go on repeating it)
  ARGV[18] '1' when the caller repeats a call whose reply it never got, else '0': only a repeat
           is answered from what was remembered; another caller with the same request id (a
           second replay of one dead letter) is judged by the delivery key like any message
  ARGV[19] lease token of a turn the caller claims in the same step once the message is accepted
           (as claim, pool/includes/claim-turn), or '' to claim none
  ARGV[20] that lease's duration, ms

  Built from ARGV[1]:
    q:<session>         reads, writes
    m:<seq>             reads, writes
    id:<message id>     reads, writes
    waiting:<pipeline>  writes
    ready:<pipeline>    reads, writes
    kept-outcomes       writes, when ARGV[16] is set and a message is dropped
    kept-outcomes:due   writes, likewise
    enqueued:<rid>      reads, writes (what an enqueue dropped, while it is remembered)
  Publishes this replica's id on ARGV[1] .. 'runnable' when a claim may succeed and the caller
  claims nothing (ARGV[19] ''): a caller that claims takes what stays claimable itself.

  Returns
    {'duplicate'}   the delivery key was seen and has not expired
    {'queue_full'}  max_pending messages wait already, or its tenant's max_pending
    {'accepted', claimable (0|1), nextDueAt (ms, -1 for none), {{payload, attempt, retryAt, acceptedAt}...},
     turn}
                    the fourth part lists the messages dropped from the full session; `turn` is
                    the one claimed under ARGV[19] ({} for none). A repeat of an accepted request
                    id answers it again (the same dropped messages, the turn its token still
                    holds) before any other check, and changes nothing
]]
--- @include "pool/includes/preamble"
--- @include "pool/includes/place-session"
--- @include "pool/includes/leases"
--- @include "pool/includes/runnable-state"
--- @include "pool/includes/claim-turn"
--- @include "kept-outcomes/includes/keep-outcomes"
--- @include "pool/includes/enqueue-tokens"

local claimToken = ARGV[19]
-- The policy of the message's pipeline, read with the limits; a claim looks at every pipeline.
local policies = { ARGV[8] }
if claimToken ~= '' then
  for _, pipeline in ipairs(pipelineList()) do
    policies[#policies + 1] = pipeline
  end
end
assertRegistered(policies)

local session = ARGV[7]
local requestId = ARGV[6]
local deliveryKey = ARGV[12]

-- Before the dedup and the bounds: the first call marked the delivery key, and may have filled
-- the queue.
local answered = ARGV[18] == '1' and enqueuedBefore(requestId)
if answered then
  local turn = {}
  if claimToken ~= '' and rcall('EXISTS', leaseKey(claimToken)) == 1 then
    turn = turnOf(claimToken)
  end
  local state = runnableState(false)
  return { 'accepted', state[1], state[2], answered, turn }
end

if deliveryKey ~= '' then
  local expiresAt = rcall('ZSCORE', K.dedup, deliveryKey)
  if expiresAt and tonumber(expiresAt) > now then
    return { 'duplicate' }
  end
end

if ARGV[14] ~= '1' and countOf('pending') >= limits().maxPending then
  return { 'queue_full' }
end

-- While tenants compete, the message waits counted against its pipeline's tenant, within the
-- tenant's max_pending (pool/includes/tenant-shares).
local tenant = limits().tenants and policyOf(ARGV[8]).tenant
if tenant and ARGV[14] ~= '1' and tenantState(tenant, true).pending >= tenantState(tenant).maxPending then
  return { 'queue_full' }
end

if deliveryKey ~= '' then
  rcall('ZADD', K.dedup, ARGV[13], deliveryKey)
end

local seq = rcall('INCR', K.seq)
-- Expired delivery keys and remembered enqueues go in batches, at one enqueue in PURGE_EVERY
-- (and at each renewal), not with a range read per message.
if seq % PURGE_EVERY == 0 then
  purgeExpired(K.dedup, PURGE_EVERY * DEDUP_PURGE_PER_CALL)
  purgeEnqueued(PURGE_EVERY * ENQUEUED_PURGE_PER_CALL)
end
-- Into a session with nothing queued or running, a message due now (no debounce, no backoff left)
-- is offered to the claim as it arrives: taken, it goes to the lease without the push, the
-- placement and the pop (pool/includes/claim-turn); else it waits as any other.
-- Only while its slots are free (the counts read with the bounds): else it waits at once.
local offered = claimToken ~= '' and not tenant and not policyOf(ARGV[8]).aggregate
    and (ARGV[11] == '' or tonumber(ARGV[11]) <= now)
    and countOf('inflight') < limits().global
    and countOf('inflight:' .. ARGV[8]) < policyOf(ARGV[8]).maxConcurrency
-- A session with nothing queued or running has no `sessions` field, and so no place either. The
-- field an offered message creates counts the turn it expects to run; put right if it waits (an
-- older head went first).
local newSession = rcall('HSETNX', K.sessions, session, offered and 1 or 0) == 1

local turn
local claimTried = false
local taken = false
local attempt = ARGV[10]
if offered and newSession then
  claimTried = true
  promoteDue()
  local claimedAttempt = tostring(tonumber(ARGV[10]) + 1)
  turn, taken = claimTurn(claimToken, tonumber(ARGV[20]), ARGV[18] == '1', {
    session = session,
    pipeline = ARGV[8],
    seq = seq,
    message = { ARGV[4], claimedAttempt, ARGV[11], ARGV[2] },
    id = ARGV[5],
    channel = ARGV[15],
  })
  if taken then
    attempt = claimedAttempt
  else
    rcall('HSET', K.sessions, session, 0)
  end
end

local fields = { 'payload', ARGV[4], 'id', ARGV[5], 'rid', requestId, 'session', session, 'pipeline', ARGV[8],
  'sender', ARGV[9], 'acceptedAt', now, 'attempt', attempt, 'channel', ARGV[15] }
if ARGV[11] ~= '' then
  fields[#fields + 1] = 'retryAt'
  fields[#fields + 1] = ARGV[11]
end
if tenant then
  fields[#fields + 1] = 'tenant'
  fields[#fields + 1] = tenant
end
rcall('HSET', messageKey(seq), unpack(fields))
rcall('SET', idKey(ARGV[5]), seq)
if taken then
  rememberEnqueued(requestId, now + tonumber(ARGV[17]), {})
  local state = runnableState(false)
  return { 'accepted', state[1], state[2], {}, turn }
end

local queue = queueKey(session)
local overflowed = {}
-- The tenant each dropped message was counted against (false: none).
local droppedTenants = {}
-- A new session's queue is empty.
local length = newSession and 0 or rcall('LLEN', queue)
local wasEmpty = length == 0
while length >= limits().maxPendingPerSession do
  local dropped = rcall('LPOP', queue)
  local messages, counted = messagesOf({ dropped })
  local message = messages[1]
  overflowed[#overflowed + 1] = message
  droppedTenants[#droppedTenants + 1] = counted[1]
  if ARGV[16] ~= '' then
    local key = 'm:' .. rcall('HGET', messageKey(dropped), 'rid') .. ':dropped'
    keepOutcome(prefix, ARGV[16], key, cjson.encode({ overflowed = message, at = now }))
  end
  removeWaiting(rcall('HGET', messageKey(dropped), 'pipeline'), { dropped })
  forgetMessage(dropped)
  length = length - 1
end
rcall('RPUSH', queue, seq)
addWaiting(ARGV[8], { seq })
uncountPending(droppedTenants)
if tenant then
  countPending(tenant, 1)
end
changeCounts({ pending = 1 - #overflowed })
rememberEnqueued(requestId, now + tonumber(ARGV[17]), overflowed)

-- A ready session whose head is unchanged stays where it is: a later message cannot make the
-- head's run wait again.
local pushedHead = wasEmpty and #overflowed == 0
    and { seq = seq, pipeline = ARGV[8], retryAt = tonumber(ARGV[11]), attempt = tonumber(ARGV[10]), acceptedAt = now }
if newSession and pushedHead then
  placeSession(session, { placed = false, running = 0, head = pushedHead })
elseif pushedHead then
  placeSession(session, { head = pushedHead })
elseif #overflowed > 0 then
  placeSession(session)
else
  local placed = rcall('HGET', K.placed, session) or false
  if placed == DELAYED then
    placeSession(session, { placed = placed })
  end
end

if claimToken ~= '' and not claimTried then
  promoteDue()
  turn = claimTurn(claimToken, tonumber(ARGV[20]), ARGV[18] == '1')
end
local state = runnableState(claimToken == '')
return { 'accepted', state[1], state[2], overflowed, turn or {} }
