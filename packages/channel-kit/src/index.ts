// The public surface of @switchboard/channel-kit.

// Option schemas of `channels[]`, also at `@switchboard/channel-kit/options`
export {
  ChannelIdSchema,
  OutboundSchema,
  bearerCredential,
  chatChannelFields,
  pacedOutboundSchema,
  platformApiUrl,
  platformSecret,
  policyOf,
} from './options/index.js';
export type { BucketRateInput, RateDefaults } from './options/index.js';

// Inbound: the webhook route and the checks of inbound calls (the JWT verifier is at
// `@switchboard/channel-kit/jwt`, so that only channels that use it load jose)
export { AUTHORIZED } from './inbound/authorization.js';
export type { Authorization } from './inbound/authorization.js';
export { constantTimeEqual } from './inbound/constant-time-equal.js';
export { deliveryKey } from './inbound/delivery-key.js';
export { ACKNOWLEDGED, dispositionOf } from './inbound/disposition.js';
export type { Disposition } from './inbound/disposition.js';
export { ed25519Verifier } from './inbound/ed25519-verifier.js';
export { hmacSha256, verifyHmacSha256 } from './inbound/hmac-sha256.js';
export type { SignatureEncoding } from './inbound/hmac-sha256.js';
export { mountWebhook } from './inbound/mount-webhook.js';
export type {
  Authorizer,
  SignedCall,
  Verifier,
  WebhookHandler,
  WebhookOptions,
} from './inbound/mount-webhook.js';
export { parseJsonObject } from './inbound/parse-json-object.js';
export type { JsonObjectResult } from './inbound/parse-json-object.js';
export { createRefusalLog } from './inbound/refusal-log.js';
export type { RefusalLogOptions } from './inbound/refusal-log.js';
export { checkTimestampWindow } from './inbound/timestamp-window.js';
export type { TimestampProblem } from './inbound/timestamp-window.js';
export { webhookPath } from './inbound/webhook-path.js';

// Media: streamed downloads of platform files for `openMedia`
export { elementFileUrl, mediaUnavailable, openDownload } from './media/open-download.js';
export type { DownloadSource } from './media/open-download.js';

// Connection: single-owner connections (long polling, websockets) behind their channel leases
export { ownChannels } from './connection/single-owner.js';
export type {
  ChannelOwnershipOptions,
  ChannelRole,
  OwnedChannel,
  OwnedChannels,
} from './connection/single-owner.js';

// Outbound: platform failures as SB_CHANNEL_* errors, JSON calls to platforms, long replies cut,
// sends and streamed previews made of a channel's post and edit calls, the texts a send posted
export { abortableCall } from './outbound/abortable-call.js';
export { channelFailure } from './outbound/channel-failure.js';
export { channelPacing } from './outbound/channel-pacing.js';
export type { ChannelPacing, PacingOptions } from './outbound/channel-pacing.js';
export type { ChannelFailureOptions, FailedCall } from './outbound/channel-failure.js';
export { failureOfHttpStatus } from './outbound/http-failure.js';
export { sendParts, showPreview } from './outbound/message-calls.js';
export type { MessageCalls, RememberedParts } from './outbound/message-calls.js';
export { networkReasonOf } from './outbound/network-reason.js';
export { failureKindOf } from './outbound/platform-failure.js';
export type { FailureKind, PlatformFailure } from './outbound/platform-failure.js';
export { platformMessageOf } from './outbound/platform-message.js';
export { createPostedTexts } from './outbound/posted-texts.js';
export type { PostedText, PostedTexts, PostedTextsOptions } from './outbound/posted-texts.js';
export { redact, redactValue } from './outbound/redact.js';
export { MAX_ANSWER_BYTES, requestPlatform } from './outbound/request-platform.js';
export type { PlatformRequest } from './outbound/request-platform.js';
export { MAX_RETRY_AFTER_MS, retryAfterMs } from './outbound/retry-after.js';
export { retryKeyOf } from './outbound/retry-key.js';
export { splitReplies, splitRepliesWithAttachments } from './outbound/split-replies.js';
export type { MediaReplyPart, ReplyPart } from './outbound/split-replies.js';
export { refuseAttachments } from './outbound/refuse-attachments.js';
export type { AttachmentRefusal } from './outbound/refuse-attachments.js';
export { attachmentFile, attachmentName } from './outbound/attachment-file.js';
export { mimeEssence } from './outbound/mime-essence.js';
export type { AttachmentFile, AttachmentFileOptions } from './outbound/attachment-file.js';

// Probe: a channel's read-only check of its credentials (`switchboard doctor`)
export { probePlatform } from './probe/probe-platform.js';
export type { ChannelProbeOptions, ProbeTarget } from './probe/probe-platform.js';
