--[[
  The pool's counts, cluster-wide.

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id

  Returns {pending, inflight, sessions, {pipeline, turns running, ...}}
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
return { countOf('pending'), countOf('inflight'), rcall('HLEN', K.sessions), byPipeline }
