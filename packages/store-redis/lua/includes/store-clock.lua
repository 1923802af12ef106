--[[
  Redis' own clock (TIME), for scripts whose deadlines replicas share: a channel lease is judged
  by this one clock whatever each host's says (docs/design.md §5 "Single-owner connections").
]]

-- Milliseconds since the epoch on Redis' clock.
local function storeNowMs()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
