--[[
  Where a message stands, for a replica asked about one it did not accept (docs/design.md §5
  "Several replicas"): reads only, O(messages waiting in its session).

  KEYS[1]  config     unused
  KEYS[2]  counts     unused
  KEYS[3]  sessions   unused
  KEYS[4]  placed     unused
  KEYS[5]  delayed    unused
  KEYS[6]  leases     unused
  KEYS[7]  dedup      unused
  KEYS[8]  replicas   unused
  KEYS[9]  seq        unused
  KEYS[10] pipelines  unused
  KEYS[11] settled    unused
  KEYS[12] enqueued   unused
  KEYS[13] tenants    unused
  ARGV[1]  key prefix '{<prefix>}:', from which the per-item keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id
  ARGV[4]  message id

  Built from ARGV[1]:
    id:<message id>  reads
    m:<seq>          reads
    q:<session>      reads

  Returns
    {}                                  unknown: never accepted, or settled over SETTLED_ID_MS ago
    {'settled', pipeline, channel}      its outcome is final; its status is being stored
    {'queued' | 'running', pipeline, payload}
]]
--- @include "pool/includes/preamble"

local held = rcall('GET', idKey(ARGV[4]))
if not held then
  return {}
end
local channel, pipeline = string.match(held, '^settled:([^:]*):(.*)$')
if pipeline then
  return { 'settled', pipeline, channel }
end
local fields = rcall('HMGET', messageKey(held), 'session', 'pipeline', 'payload')
if not fields[1] then
  return {}
end
local waiting = rcall('LPOS', queueKey(fields[1]), held)
return { waiting and 'queued' or 'running', fields[2], fields[3] }
