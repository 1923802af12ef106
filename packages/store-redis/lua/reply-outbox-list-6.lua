--[[
  One page of the channel's deliveries in add order (`list`, src/redis-reply-outbox.ts); reads
  only. The caller pages on until a page is short.

  KEYS: the six reply-outbox keys of includes/reply-outbox (counts, seq, order, waiting, ready,
        leases)
  ARGV[1..3] key prefix, channel, instance id
  ARGV[4] the seq after which the page starts (0 for the first page)
  ARGV[5] page size

  Returns {last seq of the page or '', {{body, attempts, notBefore, lastError or ''}...}}
]]
--- @include "includes/reply-outbox"

local found = rcall('ZRANGEBYSCORE', K.order, '(' .. ARGV[4], '+inf', 'WITHSCORES', 'LIMIT', 0,
  tonumber(ARGV[5]))
local page = {}
for index = 1, #found, 2 do
  page[#page + 1] = deliveryFields(found[index])
end
return { found[#found] or '', page }
