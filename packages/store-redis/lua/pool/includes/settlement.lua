--[[
  What complete, retry and abandon share: releasing the claim's lease and leaving its tombstone,
  or telling a lost claim from a repeat whose first call was applied. A repeat is recognised only
  when the caller flags it (it never got the first call's reply): any other second settlement
  of a settled claim answers `lost`, as the QueryPool contract requires.

  ARGV[4] lease token
  ARGV[5] '1' when the caller repeats a settlement of this token whose reply it never got, else '0'
  ARGV[6] how long the tombstone lasts, ms (longer than the caller may go on repeating)

  A settlement that frees a slot may claim its caller's next turn in the same step, under a lease
  token the caller made (`settledReply`): a repeat answers the turn its first
  call claimed (the same token), never a second one.

  Needs pool/includes/preamble, leases, runnable-state, tombstones and claim-turn.
]]

-- Releases `lease`, the record heldLease read for ARGV[4], as settlement `kind` and leaves its
-- tombstone; returns the record. When the token holds no lease (`lease` nil), returns nil and the
-- script's reply: {'settled', claimable, nextDueAt, turn} for a flagged repeat of the same kind
-- (the first call was applied; nothing changes; `turn`: the one it claimed under `nextToken`, if
-- it still holds), else {'lost'}.
local function settleLease(kind, lease, nextToken)
  local token = ARGV[4]
  if lease then
    freeLease(token, lease)
    -- Expired tombstones go in batches, at one settlement in PURGE_EVERY on average (by the
    -- token's first hex digit: tokens are random, a session's seqs may fall in step) and at each
    -- renewal.
    if (tonumber(string.sub(token, 1, 1), 16) or 0) % PURGE_EVERY == 0 then
      purgeExpired(K.settled, PURGE_EVERY * TOMBSTONE_PURGE_PER_CALL)
    end
    rcall('ZADD', K.settled, now + tonumber(ARGV[6]), tombstoneOf(kind, token))
    return lease
  end
  if ARGV[5] == '1' and settledAs(kind, token) then
    local next = {}
    if nextToken ~= '' and rcall('EXISTS', leaseKey(nextToken)) == 1 then
      next = turnOf(nextToken)
    end
    local state = runnableState(false)
    return nil, { 'settled', state[1], state[2], next }
  end
  return nil, { 'lost' }
end

-- The reply of an applied settlement: {'settled', claimable, nextDueAt, turn}, `turn` claimed
-- under `nextToken` for `leaseMs` (nextToken '': none asked, {}). The due sessions are placed
-- first, as a claim places them. Announced to the other replicas only when the caller claims
-- nothing: else what stays claimable is the caller's to claim next. Only a repeat (ARGV[5])
-- brings a next token that may hold a lease already (pool/includes/claim-turn).
local function settledReply(nextToken, leaseMs)
  local next = {}
  if nextToken ~= '' then
    promoteDue()
    next = claimTurn(nextToken, tonumber(leaseMs), ARGV[5] == '1') or {}
  end
  local state = runnableState(nextToken == '')
  return { 'settled', state[1], state[2], next }
end
