--[[
  Removes and returns the waiting messages of a chunk of sessions (the shutdown of a pool that
  is not durable); the caller repeats with the returned cursor until it is '0'. Running turns
  stay.

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id
  ARGV[4] cursor ('0' to start)
  ARGV[5] sessions to visit in this call (a hint to HSCAN)

  Returns {next cursor, {{payload, attempt, retryAt or '', acceptedAt}...}}
]]
--- @include "includes/pool"
--- @include "includes/place-session"
--- @include "includes/leases"

assertRegistered()

local scan = rcall('HSCAN', K.sessions, ARGV[4], 'COUNT', ARGV[5])
local taken = {}
for index = 1, #scan[2], 2 do
  local session = scan[2][index]
  local seqs = rcall('LRANGE', queueKey(session), 0, -1)
  for _, message in ipairs(messagesOf(seqs)) do
    taken[#taken + 1] = message
  end
  for _, seq in ipairs(seqs) do
    removeWaiting(rcall('HGET', messageKey(seq), 'pipeline'), { seq })
    forgetMessage(seq)
  end
  rcall('DEL', queueKey(session))
  -- Not -#seqs: for a session with only running turns that is -0, which Redis refuses as an integer.
  rcall('HINCRBY', K.counts, 'pending', 0 - #seqs)
  placeSession(session)
end
return { scan[1], taken }
