--[[
  The pool's counts, cluster-wide: O(pipelines) reads, no scan of the backlog.

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id

  Removes waiting entries whose message no longer exists (left by an older version's scripts).

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
  -- A waiting entry whose message is gone was left by a replica running an older version of
  -- the scripts (they knew no waiting sets): it is dropped here, at most 100 per read, so the
  -- count and the oldest wait heal instead of drifting for good.
  local oldest, acceptedAt = nil, -1
  for _ = 1, 100 do
    oldest = rcall('ZRANGE', waitingKey(pipeline), 0, 0)[1]
    if not oldest then break end
    local at = rcall('HGET', messageKey(oldest), 'acceptedAt')
    if at then
      acceptedAt = tonumber(at)
      break
    end
    rcall('ZREM', waitingKey(pipeline), oldest)
  end
  waiting[#waiting + 1] = pipeline
  waiting[#waiting + 1] = rcall('ZCARD', waitingKey(pipeline))
  waiting[#waiting + 1] = acceptedAt
end
return { countOf('pending'), countOf('inflight'), rcall('HLEN', K.sessions), byPipeline, waiting }
