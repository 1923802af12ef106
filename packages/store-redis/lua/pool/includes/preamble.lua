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
-- Every accepted enqueue is remembered, keyed or not: as many as delivery keys, at least.
local ENQUEUED_PURGE_PER_RENEWAL = 1000
-- Marks a delayed session in `placed`: pipeline ids cannot contain it.
local DELAYED = '~'
-- How long a forgotten message's id key still says `settled` (Redis' clock: only a bound on memory).
local SETTLED_ID_MS = 60000

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
local function waitingKey(pipeline)
  return prefix .. 'waiting:' .. pipeline
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
  rcall('SADD', K.pipelines, pipeline)
end

-- Counts messages of `pipeline` as no longer waiting (claimed, dropped or taken).
local function removeWaiting(pipeline, seqs)
  if #seqs > 0 then
    rcall('ZREM', waitingKey(pipeline), unpack(seqs))
  end
end

-- Deletes a message whose outcome is final. Its id key says `settled` a while longer: a replica
-- asked for its status between now and its final status being stored answers `running`, not 404,
-- if the message is of the channel asking (a channel id has no ':').
local function forgetMessage(seq)
  local fields = rcall('HMGET', messageKey(seq), 'id', 'pipeline', 'channel')
  rcall('DEL', messageKey(seq))
  -- Unless the id names a later copy (a replay of the same message queued meanwhile).
  if fields[1] and rcall('GET', idKey(fields[1])) == tostring(seq) then
    rcall('SET', idKey(fields[1]), 'settled:' .. (fields[3] or '') .. ':' .. fields[2], 'PX', SETTLED_ID_MS)
  end
end

local cachedLimits
local function limits()
  if not cachedLimits then
    local fields = rcall('HMGET', K.config, 'global', 'perSession', 'maxPending', 'maxPendingPerSession')
    if not fields[1] then
      -- Redis lost its data (restarted without persistence, flushed): the caller registers again.
      error({ err = 'SBNOCONFIG the pool has no configuration: register again' })
    end
    cachedLimits = {
      global = tonumber(fields[1]),
      perSession = tonumber(fields[2]),
      maxPending = tonumber(fields[3]),
      maxPendingPerSession = tonumber(fields[4]),
    }
  end
  return cachedLimits
end

-- Scripts that read the configuration call this before their first write: a script that fails
-- midway keeps the writes it made.
local function assertRegistered()
  limits()
end

local cachedPolicies = {}
-- A pipeline no longer configured runs one message at a time without a slot limit, so that the
-- controller can drop its messages (as the memory pool's fallback policy).
local function policyOf(pipeline)
  local policy = cachedPolicies[pipeline]
  if policy then
    return policy
  end
  local fields = rcall('HMGET', K.config, 'max:' .. pipeline, 'aggregate:' .. pipeline, 'delay:' .. pipeline,
    'maxWait:' .. pipeline, 'maxMessages:' .. pipeline, 'collect:' .. pipeline)
  policy = {
    maxConcurrency = tonumber(fields[1]) or math.huge,
    aggregate = fields[2] == '1',
    delayMs = tonumber(fields[3]) or 0,
    maxWaitMs = tonumber(fields[4]) or 0,
    maxMessages = tonumber(fields[5]) or 1,
    collect = fields[6] == '1',
  }
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

local function countOf(field)
  return tonumber(rcall('HGET', K.counts, field) or 0)
end
