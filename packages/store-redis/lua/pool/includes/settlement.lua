--[[
  What complete, retry and abandon share: releasing the claim's lease and leaving its tombstone,
  or telling a lost claim from a repeat whose first call was applied. A repeat is recognised only
  when the caller flags it (it never got the first call's reply): any other second settlement
  of a settled claim answers `lost`, as the QueryPool contract requires.

  ARGV[4] lease token
  ARGV[5] '1' when the caller repeats a settlement of this token whose reply it never got, else '0'
  ARGV[6] how long the tombstone lasts, ms (longer than the caller may go on repeating)

  Needs pool/includes/preamble, leases, runnable-state and tombstones.
]]

-- Releases the lease of ARGV[4] as settlement `kind` and leaves its tombstone; returns the lease
-- record. When the token holds no lease, returns nil and the script's reply: {'settled',
-- claimable, nextDueAt} for a flagged repeat of the same kind (the first call was applied;
-- nothing changes), else {'lost'}.
local function settleLease(kind)
  purgeExpired(K.settled, TOMBSTONE_PURGE_PER_CALL)
  local token = ARGV[4]
  local lease = releaseLease(token)
  if lease then
    rcall('ZADD', K.settled, now + tonumber(ARGV[6]), tombstoneOf(kind, token))
    return lease
  end
  if ARGV[5] == '1' and settledAs(kind, token) then
    local state = runnableState(false)
    return nil, { 'settled', state[1], state[2] }
  end
  return nil, { 'lost' }
end
