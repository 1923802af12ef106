--[[
  Stores one delivery in the reply outbox (docs/design.md §5 "Reply outbox"): reply-outbox/add
  runs it, and a script of another family that stores replies in its own write can include it
  (every key shares the deployment's hash tag). Reads no KEYS, and ARGV only in `addedArgs`, from
  where its caller says (the add's fields in one order, wherever they start): every key is built
  from the outbox's key prefix '{<prefix>}:reply-outbox:' and the channel, named as in
  src/reply-outbox-keys.ts and reply-outbox/includes/preamble:
    counts, seq, order:<channel>, waiting:<channel>, ready:<channel>, leases:<channel>,
    d:<id>, ended:<id>, chat:<channel>:<chat>
  A claim of the delivery added is found by its id and token alone: its caller repeats a lost one
  with both (reply-outbox/includes/claim-next).
]]

-- Stores `delivery` ({id, chat, body, attempts, notBefore, lastError, rememberForMs}, strings as
-- the preamble describes the hash) for `channel`, unless its id is stored or remembered. With
-- `claim` ({now, token, leaseMs}) it leases it at once to the claim's token when it can leave
-- now: its chat has nothing ahead, it is due, and no other chat of the channel is due (it would
-- be older). Returns 'duplicate', 'claimed' (leased to the token), 'head' (stored as its chat's
-- head, waiting for its notBefore) or 'queued' (stored behind its chat's head).
local function addDelivery(prefix, channel, delivery, claim)
  local deliveryKey = prefix .. 'd:' .. delivery.id
  if redis.call('EXISTS', deliveryKey, prefix .. 'ended:' .. delivery.id) > 0 then
    return 'duplicate'
  end
  -- Whether the chat is empty is read before the first write, and its list names the delivery
  -- only once its hash is written: Redis keeps what a script wrote before a command of it failed,
  -- and a chat head without its hash would stop every claim of the channel.
  local chatKey = prefix .. 'chat:' .. channel .. ':' .. delivery.chat
  local isHead = redis.call('LLEN', chatKey) == 0
  local seq = redis.call('INCR', prefix .. 'seq')
  local claimed = claim and isHead and tonumber(delivery.notBefore) <= claim.now
    and redis.call('ZCARD', prefix .. 'ready:' .. channel) == 0
    and #redis.call('ZRANGEBYSCORE', prefix .. 'waiting:' .. channel, '-inf', claim.now, 'LIMIT', 0, 1) == 0
  local fields = { 'body', delivery.body, 'chat', delivery.chat, 'seq', seq, 'attempts', delivery.attempts,
    'notBefore', delivery.notBefore, 'lastError', delivery.lastError, 'rememberForMs', delivery.rememberForMs }
  if claimed then
    fields[#fields + 1] = 'token'
    fields[#fields + 1] = claim.token
  end
  redis.call('HSET', deliveryKey, unpack(fields))
  redis.call('RPUSH', chatKey, delivery.id)
  redis.call('ZADD', prefix .. 'order:' .. channel, seq, delivery.id)
  redis.call('HINCRBY', prefix .. 'counts', channel, 1)
  if claimed then
    redis.call('ZADD', prefix .. 'leases:' .. channel, claim.now + claim.leaseMs, delivery.id)
    -- No token key: a claim whose reply was lost is repeated by its token with this delivery's
    -- id, which the caller knows (reply-outbox/includes/claim-next).
    return 'claimed'
  end
  if isHead then
    redis.call('ZADD', prefix .. 'waiting:' .. channel, delivery.notBefore, delivery.chat)
    return 'head'
  end
  return 'queued'
end

-- The reply {result, claimed, moreDue} of an add that placed its delivery as `placed` and claims
-- nothing else: claimed 1 when leased to the claim's token, moreDue 1 for a head left unclaimed
-- (the caller announces it).
local function addedReply(placed)
  if placed == 'duplicate' then
    return { 'duplicate', 0, 0 }
  end
  return { 'added', placed == 'claimed' and 1 or 0, placed == 'head' and 1 or 0 }
end

-- The delivery and the claim addDelivery takes, from ARGV[first...] in the order of
-- reply-outbox/add's ARGV[4..13]: id, chat, body, attempts, notBefore, lastError, rememberForMs,
-- the claim's now (or '' for no claim), token and lease length.
local function addedArgs(first)
  local now = tonumber(ARGV[first + 7])
  local delivery = {
    id = ARGV[first],
    chat = ARGV[first + 1],
    body = ARGV[first + 2],
    attempts = ARGV[first + 3],
    notBefore = ARGV[first + 4],
    lastError = ARGV[first + 5],
    rememberForMs = ARGV[first + 6],
  }
  return delivery, now and { now = now, token = ARGV[first + 8], leaseMs = tonumber(ARGV[first + 9]) }
end
