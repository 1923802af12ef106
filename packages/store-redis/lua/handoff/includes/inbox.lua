--[[
  The inbox order of handoffs (ports/handoff-store.ts `list`): the longest waiting first, by the
  oldest unread message, then by when the handoff began, then by session. The inbox is one ZSET
  whose members all score 0, so Redis orders them by their bytes: each member is the two times as
  15 digits (ms) and the session, `<waitingSince>:<startedAt>:<session>`, with fifteen `~` (after
  every digit) for a session waiting for nothing. The store reads the session from byte 33 on.
]]

-- The inbox member of a handoff; `waitingSince` is false when nothing is unread.
local function inboxMember(waitingSince, startedAt, session)
  local waiting = waitingSince and string.format('%015.0f', tonumber(waitingSince)) or '~~~~~~~~~~~~~~~'
  return waiting .. ':' .. string.format('%015.0f', tonumber(startedAt)) .. ':' .. session
end
