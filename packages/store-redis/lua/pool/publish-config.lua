--[[
  A reload on this replica made its configuration the fleet's (docs/design.md §5 "Reload"): the
  fleet's config version goes up by one and names the configuration's digest; this replica runs
  it. The other replicas find the newer version at their next check and reload their own file.

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
  ARGV[1]  key prefix '{<prefix>}:', from which the keys below are built
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id
  ARGV[4]  the digest of the configuration

  Built from ARGV[1]:
    config-version   HASH  version, digest: the fleet's configuration   reads, writes
    config-replicas  HASH  replica id -> 'version|state|at|digest|detail'  writes

  Returns the new version
]]
--- @include "pool/includes/preamble"

local versionKey = prefix .. 'config-version'
local version = rcall('HINCRBY', versionKey, 'version', 1)
rcall('HSET', versionKey, 'digest', ARGV[4])
rcall('HSET', prefix .. 'config-replicas', replica, version .. '|current|' .. now .. '|' .. ARGV[4] .. '|')
return version
