--[[
  Readiness of a session (docs/design.md §2 "Query pool", "Aggregator"): a session sits in the
  ready set of its head's pipeline, scored by the head's acceptance seq (oldest head first), in
  the delayed set until its head may run, or nowhere while its running turns fill its slot.
  Needs pool/includes/preamble.
]]

-- Takes the session out of whichever set holds it. `where`: what `placed` holds for it, when
-- the caller knows (false: nothing), else nil and it is read.
local function unplace(session, where)
  if where == nil then
    where = rcall('HGET', K.placed, session)
  end
  if not where then
    return
  end
  if where == DELAYED then
    rcall('ZREM', K.delayed, session)
    firstDue[K.delayed] = nil
  else
    rcall('ZREM', readyKey(where), session)
    readyState[where] = nil
  end
  rcall('HDEL', K.placed, session)
end

-- The head run: consecutive messages at the head for the same pipeline and sender, at most
-- maxMessages (LangBot merges other senders in; the run ends there). Returns its length, whether
-- it can still grow, and when its last message was accepted.
local function headRun(session, maxMessages)
  local seqs = rcall('LRANGE', queueKey(session), 0, maxMessages - 1)
  local head = rcall('HMGET', messageKey(seqs[1]), 'pipeline', 'sender', 'acceptedAt')
  local lastAt = tonumber(head[3])
  for index = 2, #seqs do
    local fields = rcall('HMGET', messageKey(seqs[index]), 'pipeline', 'sender', 'acceptedAt')
    if fields[1] ~= head[1] or fields[2] ~= head[2] then
      return index - 1, false, lastAt
    end
    lastAt = tonumber(fields[3])
  end
  return #seqs, #seqs < maxMessages, lastAt
end

-- When the session's head may run: its backoff first, then the debounce of its pipeline (a
-- message that ran before is not debounced again).
local function dueAtOf(session, head, policy)
  if head.retryAt then
    return head.retryAt
  end
  if not policy.aggregate or head.attempt > 0 then
    return 0
  end
  local _, open, lastAt = headRun(session, policy.maxMessages)
  if not open then
    return 0
  end
  return math.min(lastAt + policy.delayMs, head.acceptedAt + policy.maxWaitMs)
end

-- Puts the session in the set its state calls for, or forgets it once it has nothing queued or
-- running. `known` (optional) holds what the caller knows already, so it is not read again:
-- `placed` (what `placed` holds for the session, false for nothing), `running` (its turns
-- running), `head` ({seq, pipeline, retryAt (nil for none), attempt, acceptedAt} of its head).
-- `headFirst`: the head is read before `placed`, which is not read when the queue is empty: a
-- session is placed by its head, so one with an empty queue is placed nowhere (true for every
-- caller whose step left the queue as it found it, not for take-all, which empties it).
local function placeSession(session, known)
  known = known or {}
  local headSeq = known.head and known.head.seq
  if known.headFirst then
    headSeq = rcall('LINDEX', queueKey(session), 0)
    if not headSeq then
      known.placed = false
    end
  end
  unplace(session, known.placed)
  if not headSeq and not known.headFirst then
    headSeq = rcall('LINDEX', queueKey(session), 0)
  end
  local running = known.running or tonumber(rcall('HGET', K.sessions, session) or 0)
  if not headSeq then
    if running <= 0 then
      rcall('HDEL', K.sessions, session)
    end
    return
  end
  if running >= limits().perSession then
    return
  end
  local head = known.head
  if not head then
    local fields = rcall('HMGET', messageKey(headSeq), 'pipeline', 'retryAt', 'attempt', 'acceptedAt')
    head = {
      pipeline = fields[1],
      retryAt = tonumber(fields[2]),
      attempt = tonumber(fields[3]),
      acceptedAt = tonumber(fields[4]),
    }
  end
  local pipeline = head.pipeline
  local dueAt = dueAtOf(session, head, policyOf(pipeline))
  if dueAt <= now then
    rcall('ZADD', readyKey(pipeline), headSeq, session)
    readyState[pipeline] = true
    notePipeline(pipeline)
    rcall('HSET', K.placed, session, pipeline)
  else
    -- A new member: unplace took the session out of the set.
    rcall('ZADD', K.delayed, dueAt, session)
    notedDue(K.delayed, dueAt)
    rcall('HSET', K.placed, session, DELAYED)
  end
end

-- Places the delayed sessions that are due by now, at most PROMOTE_PER_CALL of them.
local function promoteDue()
  -- The first one alone when it is not due (most calls): its score is the delayed set's next due time.
  local first = rcall('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
  if not first[1] then
    firstDue[K.delayed] = false
    return
  end
  if tonumber(first[2]) > now then
    firstDue[K.delayed] = tonumber(first[2])
    return
  end
  local due = rcall('ZRANGEBYSCORE', K.delayed, '-inf', now, 'LIMIT', 0, PROMOTE_PER_CALL)
  for _, session in ipairs(due) do
    placeSession(session)
  end
end
