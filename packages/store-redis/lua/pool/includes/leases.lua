--[[
  Claims and their leases (as a model gateway's Redis concurrency control: slots in a ZSET scored by deadline, released explicitly or
  by expiry). A lease record lease:<token> holds the claim's session, pipeline, message seqs
  (comma-separated, arrival order), the replica that claimed it and when (claimedAt, ms), and
  the tenant its slot was counted against, if tenants competed then, and `recorded` = '1' when
  its messages hold the tenant they were counted against while they waited
  (pool/includes/tenant-shares), and `messages`, {id, channel} of each message as JSON, so that
  a settlement forgets them without reading them back.
  Needs pool/includes/preamble and place-session.
]]
--- @include "pool/includes/tenant-shares"

local function splitSeqs(joined)
  local seqs = {}
  for seq in string.gmatch(joined, '%d+') do
    seqs[#seqs + 1] = seq
  end
  return seqs
end

-- The record of the claim held by `token`, read without a write (a script checks it is held
-- before its first write), or nil when the token holds nothing (settled already, or reclaimed
-- after its lease expired).
local function heldLease(token)
  local fields = rcall('HMGET', leaseKey(token), 'session', 'pipeline', 'seqs', 'replica', 'tenant', 'claimedAt',
    'recorded', 'messages')
  if not fields[1] then
    return nil
  end
  return {
    session = fields[1],
    pipeline = fields[2],
    seqs = splitSeqs(fields[3]),
    replica = fields[4],
    tenant = fields[5],
    claimedAt = tonumber(fields[6]),
    recorded = fields[7] == '1',
    -- {id, channel} of each message, in the order of `seqs`.
    messages = fields[8] and cjson.decode(fields[8]) or {},
  }
end

-- Frees the slots of `lease`, the record heldLease read for `token`, and sets its `running`: the
-- turns of its session still running.
local function freeLease(token, lease)
  rcall('DEL', leaseKey(token))
  rcall('ZREM', K.leases, token)
  firstDue[K.leases] = nil
  changeCounts({ inflight = -1, ['inflight:' .. lease.pipeline] = -1 })
  if lease.tenant then
    uncountClaim(lease.tenant, lease.claimedAt)
  end
  lease.running = rcall('HINCRBY', K.sessions, lease.session, -1)
end

-- Frees the slots of the claim held by `token`; returns its record, or nil when the token holds
-- nothing.
local function releaseLease(token)
  local lease = heldLease(token)
  if lease then
    freeLease(token, lease)
  end
  return lease
end

-- Puts messages of `pipeline` back at the head of their session, in their order, and re-places
-- the session (`running`: its turns running, when the caller knows). While tenants compete they
-- wait counted against the pipeline's tenant now (a reload may have moved it); else they wait
-- uncounted, and those that still hold the record of their last count (`recorded`: the lease
-- says some do; it was taken back when they were claimed) lose it.
local function putBack(session, pipeline, seqs, running, recorded)
  addWaiting(pipeline, seqs)
  local tenant = #seqs > 0 and limits().tenants and policyOf(pipeline).tenant
  if tenant then
    countPending(tenant, #seqs)
  end
  for _, seq in ipairs(seqs) do
    if tenant then
      rcall('HSET', messageKey(seq), 'tenant', tenant)
    elseif recorded then
      rcall('HDEL', messageKey(seq), 'tenant')
    end
  end
  if #seqs > 0 then
    local reversed = {}
    for index = #seqs, 1, -1 do
      reversed[#reversed + 1] = seqs[index]
    end
    rcall('LPUSH', queueKey(session), unpack(reversed))
    changeCounts({ pending = #seqs })
  end
  placeSession(session, { running = running })
end

-- The messages of a claim as replies carry them: {payload, attempt, retryAt or '', acceptedAt}
-- each; and, read in the same HMGET, the tenant each waits counted against (false: none) and
-- {id, channel} of each, which the lease keeps for the settlement (forgetMessage).
local function messagesOf(seqs)
  local messages, tenants, identities = {}, {}, {}
  for index, seq in ipairs(seqs) do
    local fields =
      rcall('HMGET', messageKey(seq), 'payload', 'attempt', 'retryAt', 'acceptedAt', 'tenant', 'id', 'channel')
    messages[index] = { fields[1], fields[2], fields[3] or '', fields[4] }
    tenants[index] = fields[5]
    identities[index] = { fields[6] or '', fields[7] or '' }
  end
  return messages, tenants, identities
end

-- Puts the messages of expired leases back at the head of their sessions, attempts kept, at most
-- RECLAIM_PER_CALL leases. Returns {token, session, pipeline, replica, {request ids}} for each,
-- so the caller can log the turn it took over.
local function reclaimExpired()
  local reclaimed = {}
  -- One entry past the bound: after the expired ones go, the first left is the next deadline.
  local first = rcall('ZRANGE', K.leases, 0, RECLAIM_PER_CALL, 'WITHSCORES')
  local tokens = {}
  local nextDeadline = false
  for index = 1, #first, 2 do
    local deadline = tonumber(first[index + 1])
    if deadline > now or #tokens == RECLAIM_PER_CALL then
      nextDeadline = deadline
      break
    end
    tokens[#tokens + 1] = first[index]
  end
  for _, token in ipairs(tokens) do
    local lease = releaseLease(token)
    if lease then
      local requestIds = {}
      for index, seq in ipairs(lease.seqs) do
        requestIds[index] = rcall('HGET', messageKey(seq), 'rid')
      end
      putBack(lease.session, lease.pipeline, lease.seqs, lease.running, lease.recorded)
      reclaimed[#reclaimed + 1] = { token, lease.session, lease.pipeline, lease.replica, requestIds }
    else
      rcall('ZREM', K.leases, token)
    end
  end
  firstDue[K.leases] = nextDeadline
  return reclaimed
end
