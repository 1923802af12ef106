--[[
  What the sessions are doing, for operators (`/admin/sessions`, docs/design.md §5): the `limit`
  ready sessions whose heads are oldest (the first `limit` of each pipeline's ready set, merged),
  and every claim held. Reads only; O(pipelines × limit + claims), claims bounded by the global
  limit.

  KEYS[1]  config     unused
  KEYS[2]  counts     unused
  KEYS[3]  sessions   unused
  KEYS[4]  placed     unused
  KEYS[5]  delayed    unused
  KEYS[6]  leases     reads
  KEYS[7]  dedup      unused
  KEYS[8]  replicas   unused
  KEYS[9]  seq        unused
  KEYS[10] pipelines  reads
  KEYS[11] settled    unused
  KEYS[12] enqueued   unused
  KEYS[13] tenants    unused
  ARGV[1]  key prefix '{<prefix>}:', from which the per-item keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id
  ARGV[4]  limit: sessions listed at most
  ARGV[5]  '1' when only the ready sessions of ARGV[6...] are listed (none: none), '0' for every pipeline's
  ARGV[6...] the pipelines whose ready sessions are listed, when ARGV[5] is '1'

  Built from ARGV[1]:
    ready:<pipeline>  reads
    q:<session>       reads
    m:<seq>           reads
    lease:<token>     reads

  Returns {waiting, running}
    waiting  {{session, pipeline, messages waiting, head seq, head acceptedAt (ms)}...}, not
             ordered (the caller sorts by head seq and keeps `limit`)
    running  {{session, pipeline, replica, claimedAt (ms), messages waiting in the session,
             {request ids}}...}, in no order
]]
--- @include "pool/includes/preamble"
--- @include "pool/includes/leases"

local limit = tonumber(ARGV[4])

local listed = ARGV[5] == '1' and { unpack(ARGV, 6) } or rcall('SMEMBERS', K.pipelines)
local waiting = {}
for _, pipeline in ipairs(listed) do
  local top = rcall('ZRANGE', readyKey(pipeline), 0, limit - 1, 'WITHSCORES')
  for index = 1, #top, 2 do
    local session, headSeq = top[index], top[index + 1]
    waiting[#waiting + 1] = { session, pipeline, rcall('LLEN', queueKey(session)), tonumber(headSeq),
      tonumber(rcall('HGET', messageKey(headSeq), 'acceptedAt')) }
  end
end

local running = {}
for _, token in ipairs(rcall('ZRANGE', K.leases, 0, -1)) do
  local fields = rcall('HMGET', leaseKey(token), 'session', 'pipeline', 'replica', 'claimedAt', 'seqs')
  if fields[1] then
    local requestIds = {}
    for index, seq in ipairs(splitSeqs(fields[5])) do
      requestIds[index] = rcall('HGET', messageKey(seq), 'rid')
    end
    running[#running + 1] = { fields[1], fields[2], fields[3], tonumber(fields[4]) or now,
      rcall('LLEN', queueKey(fields[1])), requestIds }
  end
end
return { waiting, running }
