--[[
  The outbox's announcement that a channel may have a claimable head: the preamble's `announce`
  makes it for its script's channel, and a script of another family that stores a delivery
  (reply-outbox/includes/add-delivery) makes it from the outbox's prefix, channel and instance id.
]]

-- Tells the other instances that `channel` may have a claimable head, on `prefix` .. 'due' as
-- JSON [instance, channel] (each ignores its own echo).
local function announceDue(prefix, channel, instance)
  redis.call('PUBLISH', prefix .. 'due', cjson.encode({ instance, channel }))
end
