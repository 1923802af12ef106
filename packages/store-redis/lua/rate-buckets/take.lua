--[[
  Takes one token from each named bucket if every one has a token now, else none
  (ports/rate-buckets.ts). A bucket is one number: the moment it is full again (GCRA's
  theoretical arrival time); with interval = per / limit it has a token at `now` when
  now >= fullAt - (burst - 1) * interval, and taking one moves fullAt to
  max(fullAt, now) + interval. The key expires when the bucket is full again: a missing key is a
  full bucket, so idle buckets vanish.

  KEYS[1]  rate:<bucket>  reads, writes: the first bucket: STRING fullAt, ms
  KEYS[2]  rate:<bucket>  reads, writes: the second, when the take names two or more
  KEYS[3]  rate:<bucket>  reads, writes: the third, and so on (up to MAX_BUCKETS_PER_TAKE)
  ARGV[1]  now (ms, the caller's clock), or "" for Redis' own (TIME): one clock for every replica
  ARGV[2]  the first bucket's limit
  ARGV[3]  the first bucket's period (ms)
  ARGV[4]  the first bucket's burst
  ARGV[5..7] the second bucket's limit, period and burst; ARGV[8..10] the third's, and so on

  Returns {0} when the tokens were taken, else {wait, i, j…}: the ms until every bucket has one
  (at least 1), then the 1-based indexes of the buckets without a token now
]]
--- @include "includes/store-clock"

local now = ARGV[1] == '' and storeNowMs() or tonumber(ARGV[1])
local wait = 0
local short = {}
local intervals, fullAts = {}, {}
for i = 1, #KEYS do
  local limit, per, burst = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  intervals[i] = per / limit
  fullAts[i] = tonumber(redis.call('GET', KEYS[i]) or now)
  local bucketWait = fullAts[i] - (burst - 1) * intervals[i] - now
  if bucketWait > 0 then
    short[#short + 1] = i
  end
  wait = math.max(wait, bucketWait)
end
if wait > 0 then
  local reply = { math.ceil(wait) }
  for _, i in ipairs(short) do
    reply[#reply + 1] = i
  end
  return reply
end
for i = 1, #KEYS do
  local fullAt = math.max(fullAts[i], now) + intervals[i]
  redis.call('SET', KEYS[i], string.format('%.3f', fullAt), 'PX', math.ceil(fullAt - now))
end
return { 0 }
