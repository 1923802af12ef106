--[[
  The replicas sharing the pool, for operators (`/admin/queues`): reads only, O(replicas + turns
  running), both bounded (turns by the global limit).

  KEYS[1]  config     unused
  KEYS[2]  counts     unused
  KEYS[3]  sessions   unused
  KEYS[4]  placed     unused
  KEYS[5]  delayed    unused
  KEYS[6]  leases     reads
  KEYS[7]  dedup      unused
  KEYS[8]  replicas   reads
  KEYS[9]  seq        unused
  KEYS[10] pipelines  unused
  KEYS[11] settled    unused
  ARGV[1]  key prefix '{<prefix>}:', from which the per-item keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id

  Built from ARGV[1]:
    lease:<token>    reads
    config-replicas  reads (pool/publish-config)

  Returns {{replica id, heartbeat deadline (ms), turns running, config report or false}, ...}
  for every replica in the live set, expired ones included until the next registration removes
  them
]]
--- @include "pool/includes/preamble"

local running = {}
for _, token in ipairs(rcall('ZRANGE', K.leases, 0, -1)) do
  local holder = rcall('HGET', leaseKey(token), 'replica')
  if holder then
    running[holder] = (running[holder] or 0) + 1
  end
end
local replicas = {}
local reports = prefix .. 'config-replicas'
local entries = rcall('ZRANGE', K.replicas, 0, -1, 'WITHSCORES')
for index = 1, #entries, 2 do
  local id = entries[index]
  replicas[#replicas + 1] = { id, tonumber(entries[index + 1]), running[id] or 0, rcall('HGET', reports, id) }
  running[id] = nil
end
-- Turns of a replica no longer in the set (its entry removed, its leases not yet reclaimed).
for id, turns in pairs(running) do
  replicas[#replicas + 1] = { id, -1, turns, false }
end
return replicas
