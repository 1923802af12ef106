--[[
  Removes and returns the waiting messages of a chunk of sessions (the shutdown of a pool that
  is not durable); the caller repeats with the returned cursor until it is '0'. Running turns
  stay.

  KEYS[1]  config     reads
  KEYS[2]  counts     writes
  KEYS[3]  sessions   reads, writes
  KEYS[4]  placed     reads, writes
  KEYS[5]  delayed    writes
  KEYS[6]  leases     unused
  KEYS[7]  dedup      unused
  KEYS[8]  replicas   unused
  KEYS[9]  seq        unused
  KEYS[10] pipelines  unused
  KEYS[11] settled    unused
  KEYS[12] enqueued   unused
  KEYS[13] tenants    reads, writes
  ARGV[1]  key prefix '{<prefix>}:', from which the per-item keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id
  ARGV[4]  cursor ('0' to start)
  ARGV[5]  sessions to visit in this call (a hint to HSCAN)

  Built from ARGV[1]:
    q:<session>         reads, writes
    m:<seq>             reads, writes
    id:<message id>     reads, writes
    waiting:<pipeline>  writes
    ready:<pipeline>    writes

  Returns {next cursor, {{payload, attempt, retryAt or '', acceptedAt}...}}
]]
--- @include "pool/includes/preamble"
--- @include "pool/includes/place-session"
--- @include "pool/includes/leases"

assertRegistered()

local scan = rcall('HSCAN', K.sessions, ARGV[4], 'COUNT', ARGV[5])
local taken = {}
for index = 1, #scan[2], 2 do
  local session = scan[2][index]
  local seqs = rcall('LRANGE', queueKey(session), 0, -1)
  local messages, counted = messagesOf(seqs)
  for _, message in ipairs(messages) do
    taken[#taken + 1] = message
  end
  uncountPending(counted)
  for _, seq in ipairs(seqs) do
    removeWaiting(rcall('HGET', messageKey(seq), 'pipeline'), { seq })
    forgetMessage(seq)
  end
  rcall('DEL', queueKey(session))
  changeCounts({ pending = -#seqs })
  placeSession(session)
end
return { scan[1], taken }
