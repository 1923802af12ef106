--[[
  Takes one token from each named bucket if every one has a token now, else none
  (ports/rate-buckets.ts). A bucket is one number: the moment it is full again (GCRA's
  theoretical arrival time); with interval = per / limit it has a token at `now` when
  now >= fullAt - (burst - 1) * interval, and taking one moves fullAt to
  max(fullAt, now) + interval. The key expires when the bucket is full again: a missing key is a
  full bucket, so idle buckets vanish.

  KEYS[1] first bucket (STRING fullAt, ms)
  KEYS[2] second bucket, or any key of the slot when ARGV[2] names fewer buckets
  KEYS[3] third bucket, likewise
  ARGV[1] now (ms, the caller's clock)
  ARGV[2] how many of KEYS are buckets (1 to 3)
  ARGV[3..5] first bucket's limit, period (ms) and burst; ARGV[6..8] the second's; ARGV[9..11]
  the third's

  Returns 0 when the tokens were taken, else the ms until every bucket has one (at least 1)
]]
local now = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local wait = 0
local intervals, fullAts = {}, {}
for i = 1, count do
  local limit, per, burst = tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 2])
  intervals[i] = per / limit
  fullAts[i] = tonumber(redis.call('GET', KEYS[i]) or now)
  wait = math.max(wait, fullAts[i] - (burst - 1) * intervals[i] - now)
end
if wait > 0 then
  return math.ceil(wait)
end
for i = 1, count do
  local fullAt = math.max(fullAts[i], now) + intervals[i]
  redis.call('SET', KEYS[i], string.format('%.3f', fullAt), 'PX', math.ceil(fullAt - now))
end
return 0
