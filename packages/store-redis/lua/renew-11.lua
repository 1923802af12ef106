--[[
  One replica's heartbeat: extends the leases it still holds and its own entry among the live
  replicas (which `register` consults), and reports the tokens it no longer holds (reclaimed by
  another replica after they expired, or settled longer ago than a tombstone lasts). A token
  whose lease a settlement released while its tombstone lasts is neither extended nor reported:
  the settlement was applied but its reply has not reached the replica, which writes it again
  (includes/settlement). Purges expired tombstones (bounded), so that they go while nothing
  settles too. Also reports the pool's runnable state, so that a replica whose wake-up on the
  channel was lost finds the work anyway.

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id
  ARGV[4]    lease duration, ms: the leases and the heartbeat last that long from now
  ARGV[5...] the lease tokens this replica holds

  Returns {claimable (0|1), nextDueAt (ms, -1 for none), {tokens no longer held}}
]]
--- @include "includes/pool"
--- @include "includes/runnable-state"
--- @include "includes/tombstones"

assertRegistered()

purgeExpired(K.settled, TOMBSTONE_PURGE_PER_CALL)
local expiresAt = now + tonumber(ARGV[4])
rcall('ZADD', K.replicas, expiresAt, replica)
local lost = {}
for index = 5, #ARGV do
  local token = ARGV[index]
  if rcall('HGET', leaseKey(token), 'replica') == replica then
    rcall('ZADD', K.leases, 'XX', expiresAt, token)
  elseif not settled(token) then
    lost[#lost + 1] = token
  end
end
local state = runnableState(false)
return { state[1], state[2], lost }
