// The public surface of @switchboard/channel-whatsapp: the factory the app wires, then the pure
// parts for tools and tests.
export { createWhatsAppChannel } from './channel.js';
export type { WhatsAppChannelOptions } from './channel.js';
export { probeWhatsAppChannel } from './probe.js';
export { normalizeWhatsAppMessage } from './inbound/normalize.js';
export type { NormalizeContext } from './inbound/normalize.js';
export { parseNotification } from './inbound/parse-notification.js';
export type { MessagesChange, Notification } from './inbound/parse-notification.js';
export { answerSubscription, verifyWhatsAppSignature } from './inbound/verify.js';
export type { SubscriptionQuery } from './inbound/verify.js';
export { MAX_TEXT_CHARS } from './outbound/send.js';
export { whatsAppAttachmentRefusal } from './outbound/media-message.js';
