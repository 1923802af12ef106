--[[
  One page of the channel's deliveries in add order (`list`, src/redis-reply-outbox.ts); reads
  only. The caller pages on until a page is short.

  KEYS[1]  reply-outbox:counts             unused
  KEYS[2]  reply-outbox:seq                unused
  KEYS[3]  reply-outbox:order:<channel>    reads
  KEYS[4]  reply-outbox:waiting:<channel>  unused
  KEYS[5]  reply-outbox:ready:<channel>    unused
  KEYS[6]  reply-outbox:leases:<channel>   unused
  ARGV[1]  key prefix '{<prefix>}:reply-outbox:', from which the per-chat and per-delivery keys
           below are built
  ARGV[2]  channel
  ARGV[3]  instance id, in announcements
  ARGV[4]  the seq after which the page starts (0 for the first page)
  ARGV[5]  page size

  Built from ARGV[1]:
    d:<id>  reads

  Returns {last seq of the page or '', {{body, attempts, notBefore, lastError or ''}...}}
]]
--- @include "reply-outbox/includes/preamble"

local found = rcall('ZRANGEBYSCORE', K.order, '(' .. ARGV[4], '+inf', 'WITHSCORES', 'LIMIT', 0,
  tonumber(ARGV[5]))
local page = {}
for index = 1, #found, 2 do
  page[#page + 1] = deliveryFields(found[index])
end
return { found[#found] or '', page }
