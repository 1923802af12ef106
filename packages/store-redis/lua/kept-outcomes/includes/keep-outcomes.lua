--[[
  Outcomes kept beside the settlement that ends their messages, until their records (audit
  record, final status) are stored (src/redis-kept-outcomes.ts, docs/design.md §5 "Outcomes
  kept with their settlement"). Fixed keys of the deployment, built from its base '{<prefix>}:'
  like the per-item keys:
    <base>kept-outcomes      HASH  outcome key (outcomeKeyOf) -> the outcome JSON, or
                                   {"overflowed":{payload, attempt, retryAt, acceptedAt},"at":ms}
    <base>kept-outcomes:due  ZSET  outcome key, scored by when another replica may record it
                                   (ms on the caller's clock)
  The replica that settled forgets them once recorded (kept-outcomes/forget); any replica takes
  those whose time came (kept-outcomes/claim).
]]

-- Keeps one outcome, due at `dueAt`.
local function keepOutcome(base, dueAt, key, json)
  redis.call('HSET', base .. 'kept-outcomes', key, json)
  redis.call('ZADD', base .. 'kept-outcomes:due', dueAt, key)
end

-- Keeps the outcomes given as ARGV pairs (key, JSON) from `first` on, due at `dueAt`.
local function keepOutcomes(base, dueAt, first)
  for index = first, #ARGV, 2 do
    keepOutcome(base, dueAt, ARGV[index], ARGV[index + 1])
  end
end
