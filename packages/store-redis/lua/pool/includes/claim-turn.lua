--[[
  Taking a turn (docs/design.md §2 "Query pool", §5): among the pipelines with a free slot, the
  ready session with the oldest head; while tenants compete, the pipeline's tenant must have a
  free slot too, and the tenant that used the least slot time for its weight goes first
  (pool/includes/tenant-shares, docs/design.md §10). The batch is the head run when the pipeline
  debounces or collects, else the head alone; each message's attempt counts the claim. The
  lease is created under the caller's token: a call repeated with a token that holds a lease
  (its reply was lost) answers that same turn (turnOf) and takes no second slot. Used by claim,
  and by enqueue, complete and retry when their caller claims in the same step.

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

-- Claims the next turn under lease `token` for `leaseMs`; nil when nothing may run now. A token
-- that holds a lease already answers that turn: a call whose first reply was lost may arrive
-- after the token was used again, and a second turn written over the first would leave its slot
-- counted and its messages nowhere.
local function claimTurn(token, leaseMs)
  if rcall('EXISTS', leaseKey(token)) == 1 then
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
  local bestSession = best.session
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
  local messages, counted = messagesOf(seqs)
  -- Taken back from the tenant each was counted against, whether or not tenants compete now. The
  -- record stays until the message waits again (putBack writes it anew, or removes it).
  local uncounted = uncountPending(counted, true)
  changeCounts({ pending = -#seqs, inflight = 1, ['inflight:' .. best.pipeline] = 1 })
  local running = rcall('HINCRBY', K.sessions, bestSession, 1)
  local lease = { 'session', bestSession, 'pipeline', best.pipeline, 'seqs', table.concat(seqs, ','),
    'replica', replica, 'claimedAt', now }
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
  local expiresAt = now + leaseMs
  if rcall('ZADD', K.leases, expiresAt, token) == 1 then
    notedDue(K.leases, expiresAt)
  else
    firstDue[K.leases] = nil
  end
  placeSession(bestSession, { placed = false, running = running })
  return { token, bestSession, best.pipeline, expiresAt, messages }
end

