--[[
  Gives one token back to each named bucket (ports/rate-buckets.ts `giveBack`): the take it undoes
  moved fullAt on by one interval, so this moves it back by one, and a bucket full again loses
  its key, as one nobody took from. A bucket whose key is gone is full already: nothing to undo.

  KEYS[1]  rate:<bucket>  reads, writes: the first bucket: STRING fullAt, ms
  KEYS[2]  rate:<bucket>  reads, writes: the second, when the give-back names two or more
  KEYS[3]  rate:<bucket>  reads, writes: the third, and so on (up to MAX_BUCKETS_PER_TAKE)
  ARGV[1]  now (ms, the caller's clock), or "" for Redis' own (TIME), as the take had
  ARGV[2]  the first bucket's limit
  ARGV[3]  the first bucket's period (ms)
  ARGV[4..5] the second bucket's limit and period, and so on, in KEYS order

  Returns the number of buckets given a token
]]
--- @include "includes/store-clock"

local now = ARGV[1] == '' and storeNowMs() or tonumber(ARGV[1])
local given = 0
for i = 1, #KEYS do
  local fullAt = tonumber(redis.call('GET', KEYS[i]))
  if fullAt ~= nil then
    local back = fullAt - tonumber(ARGV[2 * i + 1]) / tonumber(ARGV[2 * i])
    if back <= now then
      redis.call('DEL', KEYS[i])
    else
      redis.call('SET', KEYS[i], string.format('%.3f', back), 'PX', math.ceil(back - now))
    end
    given = given + 1
  end
end
return given
