--[[
  Tenants' shares of the pool (docs/design.md §10 "Fair shares"), as the memory pool applies
  them: a claim goes to the tenant with a free slot (its `concurrency`) that has used the least
  slot time for its weight, `(used + inflight × now − claimedAt) / weight`; ties go by start-time
  fair queuing (`max(pass, virtualTime)`). A tenant back from idle saved no credit: its use is
  raised to `fairTime`, the use of the tenant last claimed for.

  Counted only while the stored configuration says tenants compete (config field `tenants`, set
  when the pipelines have several tenants or a share is configured): a pool of one tenant pays
  nothing for it. Each count is taken back from the tenant it was counted against, as recorded
  on the message (field `tenant` of m:<seq> while it waits) and on the lease (fields `tenant`
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

-- Reads the use and share of each of `ids` this call has not read yet, and the fair clocks:
-- one HMGET of the tenants hash and one of the config, whatever the number of tenants.
local function loadTenants(ids)
  local wanted, seen = {}, {}
  for _, id in ipairs(ids) do
    if not tenantStates[id] and not seen[id] then
      seen[id] = true
      wanted[#wanted + 1] = id
    end
  end
  if #wanted == 0 and fairClock then
    return
  end
  local useNames = { 'virtualTime', 'fairTime' }
  local shareNames = {}
  for _, id in ipairs(wanted) do
    for _, field in ipairs(TENANT_FIELDS) do
      useNames[#useNames + 1] = field .. ':' .. id
    end
    shareNames[#shareNames + 1] = 'tmax:' .. id
    shareNames[#shareNames + 1] = 'weight:' .. id
    shareNames[#shareNames + 1] = 'tpending:' .. id
  end
  local use = rcall('HMGET', K.tenants, unpack(useNames))
  if not fairClock then
    fairClock = { virtualTime = tonumber(use[1]) or 0, fairTime = tonumber(use[2]) or 0 }
  end
  local shares = #shareNames > 0 and rcall('HMGET', K.config, unpack(shareNames)) or {}
  for index, id in ipairs(wanted) do
    local at = 2 + (index - 1) * #TENANT_FIELDS
    local share = (index - 1) * 3
    tenantStates[id] = {
      id = id,
      inflight = tonumber(use[at + 1]) or 0,
      pending = tonumber(use[at + 2]) or 0,
      used = tonumber(use[at + 3]) or 0,
      claimedAt = tonumber(use[at + 4]) or 0,
      pass = tonumber(use[at + 5]) or 0,
      maxConcurrency = tonumber(shares[share + 1]) or math.huge,
      weight = tonumber(shares[share + 2]) or 1,
      maxPending = tonumber(shares[share + 3]) or math.huge,
    }
  end
end

local function tenantState(id)
  loadTenants({ id })
  return tenantStates[id]
end

-- Writes the use of `tenants` (and the fair clocks when `withClock`) in one HSET.
local function saveTenants(tenants, withClock)
  local values = {}
  for _, tenant in ipairs(tenants) do
    for _, field in ipairs(TENANT_FIELDS) do
      values[#values + 1] = field .. ':' .. tenant.id
      values[#values + 1] = exact(tenant[field])
    end
  end
  if withClock then
    values[#values + 1] = 'virtualTime'
    values[#values + 1] = exact(fairClock.virtualTime)
    values[#values + 1] = 'fairTime'
    values[#values + 1] = exact(fairClock.fairTime)
  end
  rcall('HSET', K.tenants, unpack(values))
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
  local tenant = tenantState(id)
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
-- one not counted) that no longer wait.
local function uncountPending(recorded)
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
    return
  end
  loadTenants(ids)
  local changed = {}
  for _, id in ipairs(ids) do
    local tenant = tenantStates[id]
    tenant.pending = tenant.pending - byTenant[id]
    changed[#changed + 1] = tenant
  end
  saveTenants(changed)
end

-- Counts a claim against `tenant` (its use `load` and start `start` as the claim compared them).
local function countClaim(tenant, load, start)
  fairClock.virtualTime = start
  fairClock.fairTime = math.max(fairClock.fairTime, load)
  tenant.pass = start + 1 / tenant.weight
  tenant.inflight = tenant.inflight + 1
  tenant.claimedAt = tenant.claimedAt + now
  saveTenants({ tenant }, true)
end

-- Takes back a claim counted against tenant `id` at `claimedAt`, charging it its slot time.
local function uncountClaim(id, claimedAt)
  local tenant = tenantState(id)
  tenant.inflight = tenant.inflight - 1
  tenant.used = tenant.used + now - claimedAt
  tenant.claimedAt = tenant.claimedAt - claimedAt
  saveTenants({ tenant })
end
