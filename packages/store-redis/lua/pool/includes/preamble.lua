--[[
  The pool's keys and the arguments every script starts with (docs/design.md §5), plus the
  limits and pipeline policies that `register` stored.

  KEYS (the order of src/pool-keys.ts):
    KEYS[1]  config    HASH   limits and pipeline policies of the replicas (see pool/register.lua)
    KEYS[2]  counts    HASH   pending, inflight, inflight:<pipeline>
    KEYS[3]  sessions  HASH   session -> turns running; a field exists while the session has
                              something queued or running
    KEYS[4]  placed    HASH   session -> the pipeline whose ready set holds it, or '~' (delayed)
    KEYS[5]  delayed   ZSET   session, scored by when its head may run (debounce, backoff)
    KEYS[6]  leases    ZSET   lease token, scored by its deadline
    KEYS[7]  dedup     ZSET   delivery key, scored by when it expires (the caller's clock)
    KEYS[8]  replicas  ZSET   replica id, scored by when its heartbeat expires
    KEYS[9]  seq       STRING acceptance counter: a message's age
    KEYS[10] pipelines SET    pipelines with a ready or a waiting set (renewals take out the empty)
    KEYS[11] settled   ZSET   '<kind>:<token>' of a settled claim (kind: complete, retry,
                              abandon), scored by when the tombstone expires (the caller's clock)
    KEYS[12] enqueued  ZSET   request id of an accepted enqueue, scored by when it is forgotten
                              (the caller's clock): a repeat answers the first call's result
                              (pool/includes/enqueue-tokens)
    KEYS[13] tenants   HASH   each tenant's use of its share while tenants compete:
                              inflight:<tenant>, pending:<tenant>, used:<tenant>,
                              claimedAt:<tenant>, pass:<tenant>, and the pool's virtualTime and
                              fairTime (pool/includes/tenant-shares)

  ARGV[1] key prefix ('{<prefix>}:') for the keys named by session, message, pipeline or token:
          q:<session> LIST of message seqs, m:<seq> HASH of one message, ready:<pipeline> ZSET
          of sessions scored by head seq, waiting:<pipeline> ZSET of the seqs of the pipeline's
          waiting messages (scored by seq: oldest first, for the operators' counts), lease:<token>
          HASH of one claim, id:<message id>
          STRING: the message's seq while the pool holds it, then `settled:<channel>:<pipeline>`
          for SETTLED_ID_MS once its outcome is final (see forgetMessage)
  ARGV[2] now, ms on the pool's clock (only renew also reads Redis TIME, to fence a late renewal)
  ARGV[3] the calling replica's id

  Every script but register and those that only read (stats, sessions, replicas, locate) fails
  with an error reply starting `SBNOCONFIG` when the configuration is missing (Redis lost its data): the caller registers again and retries.
]]
local rcall = redis.call
local K = {
  config = KEYS[1],
  counts = KEYS[2],
  sessions = KEYS[3],
  placed = KEYS[4],
  delayed = KEYS[5],
  leases = KEYS[6],
  dedup = KEYS[7],
  replicas = KEYS[8],
  seq = KEYS[9],
  pipelines = KEYS[10],
  settled = KEYS[11],
  enqueued = KEYS[12],
  tenants = KEYS[13],
}
local prefix = ARGV[1]
local now = tonumber(ARGV[2])
local replica = ARGV[3]

-- Bounds of the work one call does, so no call scans the backlog.
local RECLAIM_PER_CALL = 10
local PROMOTE_PER_CALL = 100
local DEDUP_PURGE_PER_CALL = 100
-- A replica renews every few seconds: this keeps up with ~200 expiring keys a second per replica.
local DEDUP_PURGE_PER_RENEWAL = 1000
local TOMBSTONE_PURGE_PER_CALL = 100
local ENQUEUED_PURGE_PER_CALL = 100
-- Enqueues purge at one call in this many (by seq), this many times the per-call bounds.
local PURGE_EVERY = 16
-- Every accepted enqueue is remembered, keyed or not: as many as delivery keys, at least.
local ENQUEUED_PURGE_PER_RENEWAL = 1000
-- Marks a delayed session in `placed`: pipeline ids cannot contain it.
local DELAYED = '~'
-- How long a forgotten message's id key still says `settled` (Redis' clock: only a bound on memory).
local SETTLED_ID_MS = 60000

-- Redis' Lua unpacks at most ~8000 values into one call: longer lists (the config of hundreds of
-- pipelines and tenants) go in calls of this many.
local UNPACK_AT_MOST = 4000

-- HMGET of `names` (any number) on `key`, in order.
local function hmgetAll(key, names)
  local values = {}
  for first = 1, #names, UNPACK_AT_MOST do
    local part = rcall('HMGET', key, unpack(names, first, math.min(first + UNPACK_AT_MOST - 1, #names)))
    for index = 1, #part do
      values[#values + 1] = part[index]
    end
  end
  return values
end

-- HSET of the field, value pairs of `list` from index `from` on (any number) on `key`.
local function hsetAll(key, list, from)
  for first = from, #list, UNPACK_AT_MOST do
    rcall('HSET', key, unpack(list, first, math.min(first + UNPACK_AT_MOST - 1, #list)))
  end
end

local function queueKey(session)
  return prefix .. 'q:' .. session
end
local function messageKey(seq)
  return prefix .. 'm:' .. seq
end
local function readyKey(pipeline)
  return prefix .. 'ready:' .. pipeline
end
local function leaseKey(token)
  return prefix .. 'lease:' .. token
end
local function idKey(id)
  return prefix .. 'id:' .. id
end
-- What this call knows of a pipeline's ready set without asking again: true when it holds a
-- session (this call added one last), false when it is empty, nil when unknown.
local readyState = {}

-- The first score of the delayed set and of the leases, by key, as far as this call knows them
-- (a number; false: the set is empty; nil: unknown, asked when needed). Adding a new member
-- keeps a known first score; removing one makes it unknown. `addedDue`: the first score this
-- call added to each, known even when the set's first is not.
local firstDue = {}
local addedDue = {}
local function notedDue(key, score)
  local first = firstDue[key]
  if first == false then
    firstDue[key] = score
  elseif first ~= nil then
    firstDue[key] = math.min(first, score)
  end
  addedDue[key] = math.min(addedDue[key] or score, score)
end

local function waitingKey(pipeline)
  return prefix .. 'waiting:' .. pipeline
end

-- The pipelines set, read once per call and kept in step with what the call adds and removes.
local knownPipelines
local function pipelineList()
  if not knownPipelines then
    knownPipelines = rcall('SMEMBERS', K.pipelines)
  end
  return knownPipelines
end

local function hasPipeline(pipeline)
  for _, member in ipairs(pipelineList()) do
    if member == pipeline then
      return true
    end
  end
  return false
end

-- Adds `pipeline` to the pipelines set unless this call saw it there.
local addedPipelines = {}
local function notePipeline(pipeline)
  if addedPipelines[pipeline] or (knownPipelines and hasPipeline(pipeline)) then
    return
  end
  rcall('SADD', K.pipelines, pipeline)
  addedPipelines[pipeline] = true
  if knownPipelines and not hasPipeline(pipeline) then
    knownPipelines[#knownPipelines + 1] = pipeline
  end
end

-- Takes `pipeline` out of the pipelines set.
local function forgetPipeline(pipeline)
  rcall('SREM', K.pipelines, pipeline)
  addedPipelines[pipeline] = nil
  if knownPipelines then
    for index, member in ipairs(knownPipelines) do
      if member == pipeline then
        table.remove(knownPipelines, index)
        break
      end
    end
  end
end

-- Counts messages of `pipeline` as waiting (accepted, or put back after a claim).
local function addWaiting(pipeline, seqs)
  if #seqs == 0 then
    return
  end
  local scored = {}
  for _, seq in ipairs(seqs) do
    scored[#scored + 1] = seq
    scored[#scored + 1] = seq
  end
  rcall('ZADD', waitingKey(pipeline), unpack(scored))
  notePipeline(pipeline)
end

-- Counts messages of `pipeline` as no longer waiting (claimed, dropped or taken).
local function removeWaiting(pipeline, seqs)
  if #seqs > 0 then
    rcall('ZREM', waitingKey(pipeline), unpack(seqs))
  end
end

-- Deletes a message whose outcome is final. Its id key says `settled` a while longer: a replica
-- asked for its status between now and its final status being stored answers `running`, not 404,
-- if the message is of the channel asking (a channel id has no ':'). `known` ({id, channel}, and
-- `pipeline`): what the caller's lease says of it, so it is not read again; nil to read it.
local function forgetMessage(seq, known, pipeline)
  local id, channel = known and known[1], known and known[2]
  if not known then
    local fields = rcall('HMGET', messageKey(seq), 'id', 'pipeline', 'channel')
    id, pipeline, channel = fields[1], fields[2], fields[3] or ''
  end
  rcall('DEL', messageKey(seq))
  if not id then
    return
  end
  -- Written with the previous value read back (one command, not a read and a write), and put
  -- back when the id names a later copy (a replay of the same message queued meanwhile, or
  -- settled meanwhile: its marker lasts at most SETTLED_ID_MS longer).
  local previous = rcall('SET', idKey(id), 'settled:' .. channel .. ':' .. pipeline, 'PX', SETTLED_ID_MS, 'GET')
  if previous == tostring(seq) then
    return
  end
  if not previous then
    rcall('DEL', idKey(id))
  elseif string.sub(previous, 1, 8) == 'settled:' then
    rcall('SET', idKey(id), previous, 'PX', SETTLED_ID_MS)
  else
    rcall('SET', idKey(id), previous)
  end
end

-- The limits and pipeline policies stored by `register`, read with one HMGET per call (or one
-- more per pipeline the call did not announce to loadConfig).
local POLICY_FIELDS = { 'max', 'aggregate', 'delay', 'maxWait', 'maxMessages', 'collect', 'tenant' }
-- The tenant of a pipeline stored without one (as DEFAULT_TENANT in @switchboard/core).
local DEFAULT_TENANT = 'default'
local cachedLimits
local cachedPolicies = {}

-- A pipeline no longer configured runs one message at a time without a slot limit, so that the
-- controller can drop its messages (as the memory pool's fallback policy).
local function policyFrom(fields, first)
  return {
    maxConcurrency = tonumber(fields[first]) or math.huge,
    aggregate = fields[first + 1] == '1',
    delayMs = tonumber(fields[first + 2]) or 0,
    maxWaitMs = tonumber(fields[first + 3]) or 0,
    maxMessages = tonumber(fields[first + 4]) or 1,
    collect = fields[first + 5] == '1',
    tenant = fields[first + 6] or DEFAULT_TENANT,
  }
end

-- Reads the limits, and the policies of `pipelines` beside them, in one HMGET.
local function loadConfig(pipelines)
  local names = { 'global', 'perSession', 'maxPending', 'maxPendingPerSession', 'tenants' }
  local wanted = {}
  for _, pipeline in ipairs(pipelines or {}) do
    if not cachedPolicies[pipeline] then
      wanted[#wanted + 1] = pipeline
      for _, field in ipairs(POLICY_FIELDS) do
        names[#names + 1] = field .. ':' .. pipeline
      end
    end
  end
  local fields = hmgetAll(K.config, names)
  if not fields[1] then
    -- Redis lost its data (restarted without persistence, flushed): the caller registers again.
    error({ err = 'SBNOCONFIG the pool has no configuration: register again' })
  end
  cachedLimits = {
    global = tonumber(fields[1]),
    perSession = tonumber(fields[2]),
    maxPending = tonumber(fields[3]),
    maxPendingPerSession = tonumber(fields[4]),
    -- Tenants compete (several among the pipelines, or a share configured): their use is counted.
    tenants = fields[5] == '1',
  }
  for index, pipeline in ipairs(wanted) do
    cachedPolicies[pipeline] = policyFrom(fields, 6 + (index - 1) * #POLICY_FIELDS)
  end
end

local function limits()
  if not cachedLimits then
    loadConfig()
  end
  return cachedLimits
end

-- Scripts that read the configuration call this before their first write: a script that fails
-- midway keeps the writes it made. `pipelines` (optional): those whose policies the call will
-- need, read in the same HMGET.
local function assertRegistered(pipelines)
  loadConfig(pipelines)
end

local function policyOf(pipeline)
  local policy = cachedPolicies[pipeline]
  if policy then
    return policy
  end
  local names = {}
  for index, field in ipairs(POLICY_FIELDS) do
    names[index] = field .. ':' .. pipeline
  end
  policy = policyFrom(rcall('HMGET', K.config, unpack(names)), 1)
  cachedPolicies[pipeline] = policy
  return policy
end

-- Removes at most `limit` members of an expiring set (scored by expiry on the caller's clock)
-- whose time has passed: Redis TTLs would run on Redis' clock, not the pool's.
local function purgeExpired(key, limit)
  local expired = rcall('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', 0, limit)
  if #expired > 0 then
    rcall('ZREM', key, unpack(expired))
  end
end

-- The counts hash (pending, inflight, inflight:<pipeline>), read whole once per call: a few
-- fields, read several times by most transitions.
local cachedCounts
local function countOf(field)
  if not cachedCounts then
    cachedCounts = {}
    local flat = rcall('HGETALL', K.counts)
    for index = 1, #flat, 2 do
      cachedCounts[flat[index]] = tonumber(flat[index + 1])
    end
  end
  return cachedCounts[field] or 0
end

-- Adds each delta of `deltas` (field -> number) to its count, in one HSET of the new values.
local function changeCounts(deltas)
  local values = {}
  for field, delta in pairs(deltas) do
    -- + 0: a count never reads '-0' (Redis refuses it as an integer).
    local value = countOf(field) + delta + 0
    cachedCounts[field] = value
    values[#values + 1] = field
    values[#values + 1] = string.format('%d', value)
  end
  if #values > 0 then
    rcall('HSET', K.counts, unpack(values))
  end
end
