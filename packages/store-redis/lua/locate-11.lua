--[[
  Where a message stands, for a replica asked about one it did not accept (docs/design.md §5
  "Several replicas"): reads only, O(messages waiting in its session).

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id
  ARGV[4] message id

  Returns
    {}                                  unknown: never accepted, or settled over SETTLED_ID_MS ago
    {'settled', pipeline, channel}      its outcome is final; its status is being stored
    {'queued' | 'running', pipeline, payload}
]]
--- @include "includes/pool"

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
