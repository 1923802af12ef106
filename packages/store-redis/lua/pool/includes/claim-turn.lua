--[[
  Taking a turn (docs/design.md §2 "Query pool", §5): among the pipelines with a free slot, the
  ready session with the oldest head; while tenants compete, the pipeline's tenant must have a
  free slot too, and the tenant that used the least slot time for its weight goes first
  (pool/includes/tenant-shares, docs/design.md §10). The batch is the head run when the pipeline
  debounces or collects, else the head alone; each message's attempt counts the claim. The
  lease is created under the caller's token: a call repeated with a token that holds a lease
  (its reply was lost) answers that same turn (turnOf) and takes no second slot, and a first call
  that arrives after its repeat (on another connection) writes no second turn over the first.
  Used by claim, and by enqueue, complete and retry when their caller claims in the same step;
  an enqueue offers the message it accepts as a candidate that is in no set yet (`arriving`).

  A turn as replies carry it: {token, session, pipeline, expiresAt,
  {{payload, attempt, retryAt or '', acceptedAt}...}}, or {} for none.
  Needs pool/includes/preamble, place-session, leases and runnable-state.
]]

-- The turn a lease record holds (a repeated claim answers it again).
local function turnOf(leaseToken)
  local fields = rcall('HMGET', leaseKey(leaseToken), 'session', 'pipeline', 'seqs')
  local expiresAt = tonumber(rcall('ZSCORE', K.leases, leaseToken))
  return { leaseToken, fields[1], fields[2], expiresAt, (messagesOf(splitSeqs(fields[3]))) }
end

-- Whether candidate `a` goes before the best so far `b`: while tenants compete, by its tenant's
-- use for its weight, then its start in fair-queuing time; then by head age.
local function before(a, b)
  if b == nil then
    return true
  end
  if a.load ~= b.load then
    return a.load < b.load
  end
  if a.start ~= b.start then
    return a.start < b.start
  end
  return a.seq < b.seq
end

-- Claims the next turn under lease `token` for `leaseMs`; nil when nothing may run now.
-- `repeated`: the caller repeats a call whose reply it never got, so the token may hold a lease
-- already; that turn is answered again. A token that is not flagged is new, except for a first
-- call that reached Redis after its repeat: the lease's ZADD NX, made before anything is taken,
-- finds it, and that call answers the turn too, taking no second one over it.
-- `arriving` (optional): the message an enqueue accepts into a session with nothing queued or
-- running, whose `sessions` field the enqueue set to 1 already, not yet in its queue or any set
-- ({session, pipeline, seq, message = {payload, attempt,
-- retryAt or '', acceptedAt}, id, channel}); it competes by its seq like a ready head, and when it
-- is chosen the lease holds it without its being pushed and popped. Returns the turn, and true
-- when it is the arriving message's.
local function claimTurn(token, leaseMs, repeated, arriving)
  if repeated and rcall('EXISTS', leaseKey(token)) == 1 then
    return turnOf(token)
  end
  if countOf('inflight') >= limits().global then
    return nil
  end
  local competing = limits().tenants
  local candidates = {}
  for _, pipeline in ipairs(pipelineList()) do
    if countOf('inflight:' .. pipeline) < policyOf(pipeline).maxConcurrency then
      -- The second tells whether the set still holds a session once the first is taken.
      local top = rcall('ZRANGE', readyKey(pipeline), 0, 1, 'WITHSCORES')
      readyState[pipeline] = top[1] ~= nil
      if top[1] then
        candidates[#candidates + 1] =
          { pipeline = pipeline, session = top[1], seq = tonumber(top[2]), hasMore = top[3] ~= nil, load = 0, start = 0 }
      end
    end
  end
  -- The enqueue offers one only while tenants do not compete: its slot needs no tenant's.
  if arriving and countOf('inflight:' .. arriving.pipeline) < policyOf(arriving.pipeline).maxConcurrency then
    candidates[#candidates + 1] =
      { pipeline = arriving.pipeline, session = arriving.session, seq = arriving.seq, arriving = true, load = 0, start = 0 }
  end
  if competing and #candidates > 0 then
    local ids = {}
    for index, candidate in ipairs(candidates) do
      ids[index] = policyOf(candidate.pipeline).tenant
    end
    loadTenants(ids, true)
  end
  local best
  for _, candidate in ipairs(candidates) do
    local tenant = competing and tenantStates[policyOf(candidate.pipeline).tenant]
    if not tenant or tenantHasSlot(tenant) then
      if tenant then
        candidate.tenant, candidate.load, candidate.start = tenant, usageOf(tenant), startOf(tenant)
      end
      if before(candidate, best) then
        best = candidate
      end
    end
  end
  if best == nil then
    return nil
  end
  local expiresAt = now + leaseMs
  if rcall('ZADD', K.leases, 'NX', expiresAt, token) == 0 then
    if rcall('EXISTS', leaseKey(token)) == 1 then
      return turnOf(token)
    end
    -- A deadline left without its record (reclaimExpired drops such entries): this lease's now.
    rcall('ZADD', K.leases, expiresAt, token)
    firstDue[K.leases] = nil
  else
    notedDue(K.leases, expiresAt)
  end
  local bestSession = best.session
  if best.arriving then
    -- What the push, the placement and the pop would leave: the message in no queue or set, its
    -- session running one turn and placed nowhere, its attempt counting this claim.
    -- The enqueue counted the turn in `sessions` already.
    changeCounts({ inflight = 1, ['inflight:' .. best.pipeline] = 1 })
    rcall('HSET', leaseKey(token), 'session', bestSession, 'pipeline', best.pipeline, 'seqs', arriving.seq,
      'replica', replica, 'claimedAt', now, 'messages', cjson.encode({ { arriving.id, arriving.channel } }))
    return { token, bestSession, best.pipeline, expiresAt, { arriving.message } }, true
  end
  -- The ready set of `best` holds it: that is what `placed` says.
  unplace(bestSession, best.pipeline)
  readyState[best.pipeline] = best.hasMore
  local policy = policyOf(best.pipeline)
  local size = 1
  if policy.aggregate or policy.collect then
    size = headRun(bestSession, policy.maxMessages)
  end
  local seqs = rcall('LPOP', queueKey(bestSession), size)
  removeWaiting(best.pipeline, seqs)
  for _, seq in ipairs(seqs) do
    rcall('HINCRBY', messageKey(seq), 'attempt', 1)
  end
  local messages, counted, identities = messagesOf(seqs)
  -- Taken back from the tenant each was counted against, whether or not tenants compete now. The
  -- record stays until the message waits again (putBack writes it anew, or removes it).
  local uncounted = uncountPending(counted, true)
  changeCounts({ pending = -#seqs, inflight = 1, ['inflight:' .. best.pipeline] = 1 })
  local running = rcall('HINCRBY', K.sessions, bestSession, 1)
  local lease = { 'session', bestSession, 'pipeline', best.pipeline, 'seqs', table.concat(seqs, ','),
    'replica', replica, 'claimedAt', now, 'messages', cjson.encode(identities) }
  if #uncounted > 0 then
    lease[#lease + 1] = 'recorded'
    lease[#lease + 1] = '1'
  end
  if best.tenant then
    countClaim(best.tenant, best.load, best.start, uncounted)
    lease[#lease + 1] = 'tenant'
    lease[#lease + 1] = best.tenant.id
  elseif #uncounted > 0 then
    saveTenants(uncounted)
  end
  rcall('HSET', leaseKey(token), unpack(lease))
  placeSession(bestSession, { placed = false, running = running })
  return { token, bestSession, best.pipeline, expiresAt, messages }
end
