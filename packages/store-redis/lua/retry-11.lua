--[[
  Retries a claim: frees its slots and puts its messages back at the head of their session,
  runnable `delay` from now (each keeps its attempt count and age), except the messages listed
  as final: they are forgotten, as by complete, and their outcomes kept until recorded. A token
  that holds no lease changes nothing; it answers `settled` only to a flagged repeat of a retry
  that was applied (includes/settlement).

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id
  ARGV[4]    lease token
  ARGV[5]    '1' when repeating a retry of this token whose reply never came, else '0'
  ARGV[6]    how long the tombstone lasts, ms
  ARGV[7]    delay, ms
  ARGV[8]    when another replica may record the outcomes kept below (ms), or '' when none are
  ARGV[9]    how many messages' outcome is final: n
  ARGV[10..9+n] their ids
  ARGV[10+n...] pairs of an outcome key and its JSON: their outcomes, kept until recorded
             (includes/kept-outcomes)

  Returns {'lost'} or {'settled', claimable (0|1), nextDueAt (ms, -1 for none)}
]]
--- @include "includes/pool"
--- @include "includes/place-session"
--- @include "includes/leases"
--- @include "includes/runnable-state"
--- @include "includes/tombstones"
--- @include "includes/settlement"
--- @include "includes/kept-outcomes"

assertRegistered()

local lease, reply = settleLease('retry')
if not lease then
  return reply
end
local retryAt = now + tonumber(ARGV[7])
local finalCount = tonumber(ARGV[9])
local final = {}
for index = 10, 9 + finalCount do
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
keepOutcomes(prefix, ARGV[8], 10 + finalCount)
local state = runnableState(true)
return { 'settled', state[1], state[2] }
