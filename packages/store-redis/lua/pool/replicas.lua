--[[
  The replicas sharing the pool, for operators (`/admin/queues`): O(replicas + turns running),
  both bounded (turns by the global limit); it deletes only stale config reports.

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
  KEYS[12] enqueued   unused
  KEYS[13] tenants    unused
  ARGV[1]  key prefix '{<prefix>}:', from which the per-item keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id

  Built from ARGV[1]:
    lease:<token>    reads
    config-replicas  reads (pool/publish-config), deletes stale reports

  Returns {{replica id, heartbeat deadline (ms), turns running, config report or false}, ...}
  for every replica in the live set, expired ones included until the next renewal or
  registration removes them; then, with deadline -1, those out of the set that hold turns or reported their config
  within REPORT_KEPT_MS (a replica whose configuration differs leaves the set but says so);
  older reports of replicas out of the set are deleted
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
-- A replica out of the set reports its config at every check (5 s): older reports are a dead one's.
local REPORT_KEPT_MS = 60000
local listed = {}
for _, row in ipairs(replicas) do
  listed[row[1]] = true
end
local fields = rcall('HGETALL', reports)
for index = 1, #fields, 2 do
  local id, report = fields[index], fields[index + 1]
  if not listed[id] then
    local at = tonumber(string.match(report, '^[^|]*|[^|]*|([^|]*)|'))
    if at and at > now - REPORT_KEPT_MS then
      replicas[#replicas + 1] = { id, -1, running[id] or 0, report }
      running[id] = nil
    else
      rcall('HDEL', reports, id)
    end
  end
end
-- Turns of a replica no longer in the set (its entry removed, its leases not yet reclaimed).
for id, turns in pairs(running) do
  replicas[#replicas + 1] = { id, -1, turns, false }
end
return replicas
