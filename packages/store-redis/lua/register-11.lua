--[[
  A replica joins the pool with the limits and pipeline policies it runs with (docs/design.md
  §5): replicas must agree on them. While another replica is alive (its heartbeat has not
  expired) and the stored configuration differs, the newcomer is refused; when none is, the
  newcomer's configuration replaces the stored one.

  KEYS: the eleven pool keys of includes/pool (config, counts, sessions, placed, delayed, leases,
        dedup, replicas, seq, pipelines, settled)
  ARGV[1..3] key prefix, now (ms), replica id
  ARGV[4]    when this replica's heartbeat expires, ms
  ARGV[5]    the configuration's fingerprint (canonical JSON), compared whole
  ARGV[6...] field, value pairs of the config hash the scripts read (includes/pool)

  Returns {1} when registered, {0, stored fingerprint} when refused
]]
--- @include "includes/pool"

rcall('ZREMRANGEBYSCORE', K.replicas, '-inf', now)
rcall('ZREM', K.replicas, replica)
local stored = rcall('HGET', K.config, 'fingerprint')
if rcall('ZCARD', K.replicas) > 0 and stored and stored ~= ARGV[5] then
  return { 0, stored }
end
if stored ~= ARGV[5] then
  rcall('DEL', K.config)
  rcall('HSET', K.config, 'fingerprint', ARGV[5], unpack(ARGV, 6))
end
rcall('ZADD', K.replicas, ARGV[4], replica)
return { 1 }
