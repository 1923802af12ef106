--[[
  What a replica needs to know after a transition: may a claim succeed now, and when does the
  next delayed session or lease come due (for its wake timer).
  Needs pool/includes/preamble.
]]
--- @include "pool/includes/tenant-shares"

-- Whether `pipeline` may take a turn now: a free slot of its own and, while tenants compete, one
-- of its tenant's (else every message a capped tenant queues would wake every replica for nothing).
local function hasFreeSlot(pipeline)
  local policy = policyOf(pipeline)
  if countOf('inflight:' .. pipeline) >= policy.maxConcurrency then
    return false
  end
  return not limits().tenants or tenantHasSlot(tenantState(policy.tenant, true))
end

-- 1 when a global slot is free and a ready session's pipeline has a free slot, else 0.
local function claimable()
  if countOf('inflight') >= limits().global then
    return 0
  end
  for pipeline, filled in pairs(readyState) do
    if filled and hasFreeSlot(pipeline) then
      return 1
    end
  end
  for _, pipeline in ipairs(pipelineList()) do
    -- An empty ready set first: its pipeline's policy need not be read.
    if readyState[pipeline] == nil and rcall('ZCARD', readyKey(pipeline)) > 0 and hasFreeSlot(pipeline) then
      return 1
    end
  end
  return 0
end

-- The earliest due time of a delayed session or a lease deadline, ms; -1 when there is none.
-- `full`: both sets are read when this call does not know their first score (the wake timer's
-- and the renewal's report); else only what the call knows costs nothing: the delayed set's
-- first score when it read it, or the earliest session it delayed. A replica arms its timer for
-- the sessions it delays itself; the others' renewals report every due time within a renewal
-- period (docs/design.md §5 "Wake-ups").
local function nextDueAt(full)
  local due = -1
  for _, key in ipairs(full and { K.delayed, K.leases } or { K.delayed }) do
    local at = firstDue[key]
    if at == nil and full then
      local first = rcall('ZRANGE', key, 0, 0, 'WITHSCORES')
      at = first[2] and tonumber(first[2]) or false
    elseif at == nil then
      at = addedDue[key] or false
    end
    if at and (due < 0 or at < due) then
      due = at
    end
  end
  return due
end

-- {claimable, nextDueAt} (`full`: see nextDueAt); `announce` also tells the other replicas when a
-- claim may succeed, on the '<prefix>runnable' channel with this replica's id (they ignore their
-- own echo). A transition whose caller claims for itself announces nothing: what it leaves
-- claimable, the caller claims next (docs/design.md §5 "Wake-ups").
local function runnableState(announce, full)
  local state = { claimable(), nextDueAt(full) }
  if announce and state[1] == 1 then
    rcall('PUBLISH', prefix .. 'runnable', replica)
  end
  return state
end