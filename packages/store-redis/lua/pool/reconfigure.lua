--[[
  A reload puts other limits and pipeline policies in force (docs/design.md §5): the stored
  configuration is replaced whatever the live replicas run. Each of them finds the difference at
  its next renewal, reloads its own file and goes on once it runs the same (until then its
  renewals answer `config_mismatch`).

  KEYS[1]  config     reads, writes
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
  ARGV[1]  key prefix '{<prefix>}:'
  ARGV[2]  now, ms on the pool's clock
  ARGV[3]  replica id
  ARGV[4]  the configuration's fingerprint (canonical JSON), compared whole
  ARGV[5...] field, value pairs of the config hash the scripts read (pool/includes/preamble)

  Returns 1
]]
--- @include "pool/includes/preamble"

if rcall('HGET', K.config, 'fingerprint') ~= ARGV[4] then
  rcall('DEL', K.config)
  rcall('HSET', K.config, 'fingerprint', ARGV[4])
  hsetAll(K.config, ARGV, 5)
end
return 1
