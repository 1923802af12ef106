--[[
  Retries a claim: frees its slots and puts its messages back at the head of their session,
  runnable `delay` from now (each keeps its attempt count and age), except the messages listed
  as final: they are forgotten, as by complete. A token that holds no lease changes nothing; it
  answers `settled` only to a flagged repeat of a retry that was applied (includes/settlement).

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id
  ARGV[4]    lease token
  ARGV[5]    '1' when repeating a retry of this token whose reply never came, else '0'
  ARGV[6]    how long the tombstone lasts, ms
  ARGV[7]    delay, ms
  ARGV[8...] ids of the messages whose outcome is final

  Returns {'lost'} or {'settled', claimable (0|1), nextDueAt (ms, -1 for none)}
]]
--- @include "includes/pool"
--- @include "includes/place-session"
--- @include "includes/leases"
--- @include "includes/runnable-state"
--- @include "includes/tombstones"
--- @include "includes/settlement"

assertRegistered()

local lease, reply = settleLease('retry')
if not lease then
  return reply
end
local retryAt = now + tonumber(ARGV[7])
local final = {}
for index = 8, #ARGV do
  final[ARGV[index]] = true
end
local retried = {}
for _, seq in ipairs(lease.seqs) do
  if final[rcall('HGET', messageKey(seq), 'id')] then
    forgetMessage(seq)
  else
    rcall('HSET', messageKey(seq), 'retryAt', retryAt)
    retried[#retried + 1] = seq
  end
end
putBack(lease.session, lease.pipeline, retried)
local state = runnableState(true)
return { 'settled', state[1], state[2] }
