--[[
  The claim every claiming script makes (reply-outbox/claim, and add and remove when their caller
  asks for one): takes back expired leases (their instance stopped or lost Redis: the heads go
  back among the unclaimed chats, attempts unchanged), moves the chats whose head is due by `now`
  from `waiting` to `ready`, both bounded, then pops the ready chat with the oldest head and
  leases the head to the caller's token. Needs reply-outbox/includes/preamble.

  Built from the preamble's prefix:
    token:<token>          reads, writes
    d:<id>                 reads, writes
    chat:<channel>:<chat>  reads
]]

-- Bounds of one call's work, so that no call scans the backlog: past them, the next call goes on.
local RECLAIM_PER_CALL = 10
local PROMOTE_PER_CALL = 100

-- Claims the channel's oldest due head for `token`, leased for `leaseMs` from `now`. A
-- `repeated` token (the caller never got the reply of a claim with it) that still holds its
-- delivery gets that one again, leased anew, and nothing more: the delivery `heldId` names (the
-- one an add leased as it stored it, which leaves no token key), else the one its token key
-- names. Returns the claimed id or false, whether another due chat is left unclaimed, and the
-- leases taken back ({{id, chat}...}).
local function claimNext(now, token, leaseMs, repeated, heldId)
  local deadline = now + leaseMs
  if repeated then
    local held = heldId
    if not held or rcall('HGET', deliveryKey(held), 'token') ~= token then
      held = rcall('GET', tokenKey(token))
    end
    if held and rcall('HGET', deliveryKey(held), 'token') == token then
      rcall('ZADD', K.leases, 'XX', deadline, held)
      rcall('SET', tokenKey(token), held, 'PX', leaseMs)
      return held, false, {}
    end
  end

  local reclaimed = {}
  for _, id in ipairs(rcall('ZRANGEBYSCORE', K.leases, '-inf', now, 'LIMIT', 0, RECLAIM_PER_CALL)) do
    local chat = rcall('HGET', deliveryKey(id), 'chat')
    releaseClaim(id)
    if chat then
      placeHead(chat)
      reclaimed[#reclaimed + 1] = { id, chat }
    end
  end

  -- The heads of the chats promoted here, by chat: the claim below need not read them again.
  local promoted = {}
  local due = rcall('ZRANGEBYSCORE', K.waiting, '-inf', now, 'LIMIT', 0, PROMOTE_PER_CALL)
  if #due > 0 then
    rcall('ZREM', K.waiting, unpack(due))
  end
  for _, chat in ipairs(due) do
    local head = rcall('LINDEX', chatKey(chat), 0)
    if head then
      rcall('ZADD', K.ready, rcall('HGET', deliveryKey(head), 'seq'), chat)
      promoted[chat] = head
    end
  end

  -- Two popped, the second put back: whether more is due costs no call of its own.
  local top = rcall('ZPOPMIN', K.ready, 2)
  if top[3] then
    rcall('ZADD', K.ready, top[4], top[3])
  end
  local head = top[1] and (promoted[top[1]] or rcall('LINDEX', chatKey(top[1]), 0))
  if not head then
    return false, false, reclaimed
  end
  rcall('HSET', deliveryKey(head), 'token', token)
  rcall('SET', tokenKey(token), head, 'PX', leaseMs)
  rcall('ZADD', K.leases, deadline, head)
  return head, top[3] ~= nil, reclaimed
end
