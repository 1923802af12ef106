--[[
  Tombstones of settled claims (docs/design.md §5 "Redis down"): `settled` holds
  '<kind>:<token>' for a while after `kind` (complete, retry, abandon) released the lease of
  `token`, so that a settlement Redis applied but whose reply was lost can be written again by
  its holder and answered `settled` instead of `lost`.
  Needs pool/includes/preamble.
]]

local SETTLEMENT_KINDS = { 'complete', 'retry', 'abandon' }

local function tombstoneOf(kind, token)
  return kind .. ':' .. token
end

-- Whether `kind` settled `token` and its tombstone has not expired (purges are bounded, so an
-- expired one may still be there).
local function settledAs(kind, token)
  local expiresAt = rcall('ZSCORE', K.settled, tombstoneOf(kind, token))
  return expiresAt ~= false and tonumber(expiresAt) > now
end

-- Whether any settlement released `token`'s lease within its tombstone's time.
local function settled(token)
  for _, kind in ipairs(SETTLEMENT_KINDS) do
    if settledAs(kind, token) then
      return true
    end
  end
  return false
end
