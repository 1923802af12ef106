--[[
  A replica joins the pool with the limits and pipeline policies it runs with (docs/design.md
  §5): replicas must agree on them. While another replica is alive (its heartbeat has not
  expired) and the stored configuration differs, the newcomer is refused; when none is, the
  newcomer's configuration replaces the stored one.

  KEYS[1]  config     reads, writes
  KEYS[2]  counts     unused
  KEYS[3]  sessions   unused
  KEYS[4]  placed     unused
  KEYS[5]  delayed    unused
  KEYS[6]  leases     unused
  KEYS[7]  dedup      unused
  KEYS[8]  replicas   reads, writes
  KEYS[9]  seq        unused
  KEYS[10] pipelines  unused
  KEYS[11] settled    unused
  KEYS[12] enqueued   unused
  KEYS[13] tenants    unused
  ARGV[1]  key prefix '{<prefix>}:', from which the per-item keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id
  ARGV[4]  when this replica's heartbeat expires, ms
  ARGV[5]  the configuration's fingerprint (canonical JSON), compared whole
  ARGV[6...] field, value pairs of the config hash the scripts read (pool/includes/preamble)

  Built from ARGV[1]:
    config-replicas  HASH  the config report of each replica (pool/publish-config)   writes

  Returns {1} when registered, {0, stored fingerprint} when refused
]]
--- @include "pool/includes/preamble"

-- Replicas whose heartbeat expired leave the set, and their config reports with them.
local expired = rcall('ZRANGEBYSCORE', K.replicas, '-inf', now)
if #expired > 0 then
  rcall('HDEL', prefix .. 'config-replicas', unpack(expired))
end
rcall('ZREMRANGEBYSCORE', K.replicas, '-inf', now)
rcall('ZREM', K.replicas, replica)
local stored = rcall('HGET', K.config, 'fingerprint')
if rcall('ZCARD', K.replicas) > 0 and stored and stored ~= ARGV[5] then
  return { 0, stored }
end
if stored ~= ARGV[5] then
  rcall('DEL', K.config)
  rcall('HSET', K.config, 'fingerprint', ARGV[5])
  hsetAll(K.config, ARGV, 6)
end
rcall('ZADD', K.replicas, ARGV[4], replica)
return { 1 }
