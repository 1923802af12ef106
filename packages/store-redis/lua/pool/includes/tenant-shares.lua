--[[
  Tenants' shares of the pool (docs/design.md §10 "Fair shares"), as the memory pool applies
  them: a claim goes to the tenant with a free slot (its `concurrency`) that has used the least
  slot time for its weight, `(used + inflight × now − claimedAt) / weight`; ties go by start-time
  fair queuing (`max(pass, virtualTime)`). A tenant back from idle saved no credit: its use is
  raised to `fairTime`, the use of the tenant last claimed for.

  Counted only while the stored configuration says tenants compete (config field `tenants`, set
  when the pipelines have several tenants or a share is configured): a pool of one tenant pays
  nothing for it. Each count is taken back from the tenant it was counted against, as recorded
  on the message (field `tenant` of m:<seq>, written when it starts waiting counted, read when
  it stops waiting: claimed, dropped, taken) and on the lease (fields `tenant`
  and `claimedAt` of lease:<token>), so a reload that turns counting on or off, or gives a
  pipeline to another tenant, can leave no count negative or stuck.

  Shares, in the config hash (absent: unbounded, weight 1, unbounded):
    tmax:<tenant>  weight:<tenant>  tpending:<tenant>
  Use, in the tenants hash (KEYS[13]): inflight:<tenant> pending:<tenant> used:<tenant> (slot
  ms) claimedAt:<tenant> (the sum of its running claims' claim times) pass:<tenant>, and
  virtualTime and fairTime.

  Needs pool/includes/preamble.
]]

local TENANT_FIELDS = { 'inflight', 'pending', 'used', 'claimedAt', 'pass' }

-- What this call read of each tenant (its use and its share), and of the pool's fair clocks.
local tenantStates = {}
local fairClock

-- Floats (pass, virtual time, used slot time) survive the round trip through a string exactly.
local function exact(value)
  return string.format('%.17g', value)
end

-- Reads the use of each of `ids` this call has not read yet, with the fair clocks, in one HMGET
-- of the tenants hash; `withShares`: their shares too, in one HMGET of the config (only what
-- compares or charges by weight needs them).
local function loadTenants(ids, withShares)
  local wantUse, wantShares, seen = {}, {}, {}
  for _, id in ipairs(ids) do
    if not seen[id] then
      seen[id] = true
      local known = tenantStates[id]
      if not known then
        wantUse[#wantUse + 1] = id
      end
      if withShares and not (known and known.weight) then
        wantShares[#wantShares + 1] = id
      end
    end
  end
  if #wantUse > 0 or not fairClock then
    local names = { 'virtualTime', 'fairTime' }
    for _, id in ipairs(wantUse) do
      for _, field in ipairs(TENANT_FIELDS) do
        names[#names + 1] = field .. ':' .. id
      end
    end
    local use = hmgetAll(K.tenants, names)
    if not fairClock then
      fairClock = { virtualTime = tonumber(use[1]) or 0, fairTime = tonumber(use[2]) or 0 }
    end
    for index, id in ipairs(wantUse) do
      local at = 2 + (index - 1) * #TENANT_FIELDS
      tenantStates[id] = {
        id = id,
        inflight = tonumber(use[at + 1]) or 0,
        pending = tonumber(use[at + 2]) or 0,
        used = tonumber(use[at + 3]) or 0,
        claimedAt = tonumber(use[at + 4]) or 0,
        pass = tonumber(use[at + 5]) or 0,
      }
    end
  end
  if #wantShares > 0 then
    local names = {}
    for _, id in ipairs(wantShares) do
      names[#names + 1] = 'tmax:' .. id
      names[#names + 1] = 'weight:' .. id
      names[#names + 1] = 'tpending:' .. id
    end
    local shares = hmgetAll(K.config, names)
    for index, id in ipairs(wantShares) do
      local tenant, at = tenantStates[id], (index - 1) * 3
      tenant.maxConcurrency = tonumber(shares[at + 1]) or math.huge
      tenant.weight = tonumber(shares[at + 2]) or 1
      tenant.maxPending = tonumber(shares[at + 3]) or math.huge
    end
  end
end

local function tenantState(id, withShare)
  loadTenants({ id }, withShare)
  return tenantStates[id]
end

-- Writes the use of `tenants` (each once) and, when `withClock`, the fair clocks, in one HSET.
local function saveTenants(tenants, withClock)
  local values, saved = {}, {}
  for _, tenant in ipairs(tenants) do
    if not saved[tenant.id] then
      saved[tenant.id] = true
      for _, field in ipairs(TENANT_FIELDS) do
        values[#values + 1] = field .. ':' .. tenant.id
        values[#values + 1] = exact(tenant[field])
      end
    end
  end
  if withClock then
    values[#values + 1] = 'virtualTime'
    values[#values + 1] = exact(fairClock.virtualTime)
    values[#values + 1] = 'fairTime'
    values[#values + 1] = exact(fairClock.fairTime)
  end
  hsetAll(K.tenants, values, 1)
end

-- The slot time `tenant` has used by now, for its weight.
local function usageOf(tenant)
  return (tenant.used + tenant.inflight * now - tenant.claimedAt) / tenant.weight
end

-- When the tenant's next turn starts in virtual time: a tenant back from idle saved no credit.
local function startOf(tenant)
  return math.max(tenant.pass, fairClock.virtualTime)
end

local function tenantHasSlot(tenant)
  return tenant.inflight < tenant.maxConcurrency
end

-- Counts `count` messages waiting for tenant `id`; a tenant back from idle saved no slot time
-- while away. The caller records the tenant on each message.
local function countPending(id, count)
  local tenant = tenantState(id, true)
  if tenant.pending == 0 and tenant.inflight == 0 then
    local behind = fairClock.fairTime - usageOf(tenant)
    if behind > 0 then
      tenant.used = tenant.used + behind * tenant.weight
    end
  end
  tenant.pending = tenant.pending + count
  saveTenants({ tenant })
end

-- Takes back the waiting messages of `recorded` (the tenant each counted against, or false for
-- one not counted) that no longer wait. `unsaved`: returns the tenants changed for the caller to
-- write with its own changes, instead of writing them.
local function uncountPending(recorded, unsaved)
  local byTenant, ids = {}, {}
  for _, id in ipairs(recorded) do
    if id then
      if not byTenant[id] then
        ids[#ids + 1] = id
      end
      byTenant[id] = (byTenant[id] or 0) + 1
    end
  end
  if #ids == 0 then
    return {}
  end
  loadTenants(ids)
  local changed = {}
  for _, id in ipairs(ids) do
    local tenant = tenantStates[id]
    tenant.pending = tenant.pending - byTenant[id]
    changed[#changed + 1] = tenant
  end
  if not unsaved then
    saveTenants(changed)
  end
  return changed
end

-- Counts a claim against `tenant` (its use `load` and start `start` as the claim compared them),
-- writing it with the changes to `others`.
local function countClaim(tenant, load, start, others)
  fairClock.virtualTime = start
  fairClock.fairTime = math.max(fairClock.fairTime, load)
  tenant.pass = start + 1 / tenant.weight
  tenant.inflight = tenant.inflight + 1
  tenant.claimedAt = tenant.claimedAt + now
  others[#others + 1] = tenant
  saveTenants(others, true)
end

-- Takes back a claim counted against tenant `id` at `claimedAt`, charging it its slot time.
local function uncountClaim(id, claimedAt)
  local tenant = tenantState(id)
  tenant.inflight = tenant.inflight - 1
  tenant.used = tenant.used + now - claimedAt
  tenant.claimedAt = tenant.claimedAt - claimedAt
  saveTenants({ tenant })
end
