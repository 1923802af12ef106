--[[
  The replicas sharing the pool, for operators (`/admin/queues`): reads only, O(replicas + turns
  running), both bounded (turns by the global limit).

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id

  Returns {{replica id, heartbeat deadline (ms), turns running}, ...} for every replica in the
  live set, expired ones included until the next registration removes them
]]
--- @include "includes/pool"

local running = {}
for _, token in ipairs(rcall('ZRANGE', K.leases, 0, -1)) do
  local holder = rcall('HGET', leaseKey(token), 'replica')
  if holder then
    running[holder] = (running[holder] or 0) + 1
  end
end
local replicas = {}
local entries = rcall('ZRANGE', K.replicas, 0, -1, 'WITHSCORES')
for index = 1, #entries, 2 do
  local id = entries[index]
  replicas[#replicas + 1] = { id, tonumber(entries[index + 1]), running[id] or 0 }
  running[id] = nil
end
-- Turns of a replica no longer in the set (its entry removed, its leases not yet reclaimed).
for id, turns in pairs(running) do
  replicas[#replicas + 1] = { id, -1, turns }
end
return replicas
