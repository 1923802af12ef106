--[[
  Appends one audit record to the audit outbox unless it holds maxEntries records already
  (docs/design.md §5 "Several replicas").

  KEYS[1] the outbox list ({<prefix>}:audit-outbox)
  ARGV[1] maxEntries
  ARGV[2] the record (JSON)

  Returns {1, length after the push} when appended, {0, length} when refused (full)
]]
local length = redis.call('LLEN', KEYS[1])
if length >= tonumber(ARGV[1]) then
  return { 0, length }
end
return { 1, redis.call('RPUSH', KEYS[1], ARGV[2]) }
