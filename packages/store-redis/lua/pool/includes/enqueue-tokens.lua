--[[
  The enqueues applied lately, by request id (docs/design.md §5 "Redis down"): a replica whose
  enqueue reply was lost (a timeout, a cut connection) calls again with the same request id,
  and the repeat answers what the first call answered instead of queuing the message twice.
    K.enqueued                ZSET    request id, scored by when it is forgotten (the caller's
                                      clock); bounded: every enqueue and renewal purges
    <prefix>enqueued:<rid>    STRING  the messages the enqueue of <rid> dropped from the full
                                      session ({{payload, attempt, retryAt, acceptedAt}...} JSON),
                                      only when it dropped some; removed with its entry
  Needs pool/includes/preamble.
]]

local function enqueuedKey(requestId)
  return prefix .. 'enqueued:' .. requestId
end

-- Forgets at most `limit` enqueues whose time has passed, with what they dropped.
local function purgeEnqueued(limit)
  local expired = rcall('ZRANGEBYSCORE', K.enqueued, '-inf', now, 'LIMIT', 0, limit)
  if #expired == 0 then
    return
  end
  rcall('ZREM', K.enqueued, unpack(expired))
  local keys = {}
  for index, requestId in ipairs(expired) do
    keys[index] = enqueuedKey(requestId)
  end
  rcall('DEL', unpack(keys))
end

-- Remembers that `requestId` was accepted until `forgetAt`, with the messages it dropped. An
-- earlier acceptance of the same request id (a second replay of one dead letter) is replaced,
-- what it dropped too: a repeat answers the latest.
local function rememberEnqueued(requestId, forgetAt, overflowed)
  local added = rcall('ZADD', K.enqueued, forgetAt, requestId)
  if #overflowed > 0 then
    rcall('SET', enqueuedKey(requestId), cjson.encode(overflowed))
  elseif added == 0 then
    rcall('DEL', enqueuedKey(requestId))
  end
end

-- The messages the enqueue of `requestId` dropped when it was accepted and is still remembered
-- (an empty table when it dropped none), else nil. Purges are bounded, so an expired one may
-- still be there: it is forgotten here, what it dropped too, or a later acceptance of the same
-- request that drops nothing would answer the old drops.
local function enqueuedBefore(requestId)
  local forgetAt = rcall('ZSCORE', K.enqueued, requestId)
  if not forgetAt then
    return nil
  end
  if tonumber(forgetAt) <= now then
    rcall('ZREM', K.enqueued, requestId)
    rcall('DEL', enqueuedKey(requestId))
    return nil
  end
  local dropped = rcall('GET', enqueuedKey(requestId))
  return dropped and cjson.decode(dropped) or {}
end
