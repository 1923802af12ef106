--[[
  The pool's counts, cluster-wide: O(pipelines) reads, no scan of the backlog.

  KEYS[1]  config     unused
  KEYS[2]  counts     reads
  KEYS[3]  sessions   reads
  KEYS[4]  placed     unused
  KEYS[5]  delayed    unused
  KEYS[6]  leases     unused
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

  Built from ARGV[1]:
    waiting:<pipeline>  reads
    m:<seq>             reads

  Returns {pending, inflight, sessions, {pipeline, turns running, ...},
           {pipeline, messages waiting, acceptedAt of the oldest waiting (ms, -1 for none), ...}}
]]
--- @include "pool/includes/preamble"

local byPipeline = {}
local counts = rcall('HGETALL', K.counts)
for index = 1, #counts, 2 do
  local pipeline = string.match(counts[index], '^inflight:(.+)$')
  if pipeline then
    byPipeline[#byPipeline + 1] = pipeline
    byPipeline[#byPipeline + 1] = counts[index + 1]
  end
end
local waiting = {}
for _, pipeline in ipairs(rcall('SMEMBERS', K.pipelines)) do
  local oldest = rcall('ZRANGE', waitingKey(pipeline), 0, 0)[1]
  local acceptedAt = oldest and tonumber(rcall('HGET', messageKey(oldest), 'acceptedAt')) or -1
  waiting[#waiting + 1] = pipeline
  waiting[#waiting + 1] = rcall('ZCARD', waitingKey(pipeline))
  waiting[#waiting + 1] = acceptedAt
end
return { countOf('pending'), countOf('inflight'), rcall('HLEN', K.sessions), byPipeline, waiting }
