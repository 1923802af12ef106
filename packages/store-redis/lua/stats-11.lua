--[[
  The pool's counts, cluster-wide: O(pipelines) reads, no scan of the backlog.

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id

  Returns {pending, inflight, sessions, {pipeline, turns running, ...},
           {pipeline, messages waiting, acceptedAt of the oldest waiting (ms, -1 for none), ...}}
]]
--- @include "includes/pool"

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
