import { type Element, type InboundMessage, SwitchboardError, parseInboundMessage } from '@switchboard/core';

/** What the normalizer needs besides the event; passed in so that it stays pure. */
export interface NormalizeContext {
  /** The configured channel id (`channels[].id`). */
  channelId: string;
  /** The bot's own user id (`U…`): mentions of it set `mentions_bot`, its messages are `is_bot`. */
  botUserId: string;
  /** The bot's user name, to render `<@botUserId>` as `@name`; `@U…` without it. */
  botName?: string;
  /** The gateway id for the message (`newMessageId()`). */
  messageId: string;
  /** Milliseconds since the epoch. */
  receivedAt: number;
}

/**
 * Message subtypes that are something a person (or bot) said. `message_changed` and
 * `message_deleted` become events (`eventOf`); everything else (`channel_join`,
 * `channel_topic`…) is a side effect the gateway ignores.
 */
const SPOKEN_SUBTYPES = new Set([undefined, 'file_share', 'thread_broadcast', 'me_message', 'bot_message']);

interface SlackFile {
  id?: string;
  name?: string;
  mimetype?: string;
  subtype?: string;
  url_private?: string;
}

/** The fields of a `message` / `app_mention` event the gateway reads, after the checks below. */
interface SpokenEvent {
  type: 'message' | 'app_mention';
  subtype?: string;
  channel: string;
  channel_type?: string;
  ts: string;
  thread_ts?: string;
  user?: string;
  bot_id?: string;
  username?: string;
  user_profile?: { display_name?: string; real_name?: string; name?: string };
  text?: string;
  files?: SlackFile[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function badField(path: string, problem: string): SwitchboardError {
  return new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: `${path}: ${problem}`, details: { path } });
}

/**
 * Checks the fields read below; throws SB_HTTP_BAD_REQUEST naming the first bad one. `path`: where
 * `event` is in the body (a changed message sits in `event.message`).
 */
function checkSpokenEvent(event: Record<string, unknown>, path = 'event'): SpokenEvent {
  for (const key of ['channel', 'ts'] as const) {
    if (typeof event[key] !== 'string' || event[key] === '')
      throw badField(`${path}.${key}`, 'expected a non-empty string');
  }
  for (const key of ['subtype', 'channel_type', 'thread_ts', 'user', 'bot_id', 'username', 'text'] as const) {
    if (event[key] !== undefined && typeof event[key] !== 'string')
      throw badField(`${path}.${key}`, 'expected a string');
  }
  if (event.files !== undefined && !(Array.isArray(event.files) && event.files.every(isRecord))) {
    throw badField(`${path}.files`, 'expected an array of objects');
  }
  if (event.user_profile !== undefined && !isRecord(event.user_profile)) {
    throw badField(`${path}.user_profile`, 'expected an object');
  }
  return event as unknown as SpokenEvent;
}

/** `im` is a direct message; `channel`, `group` (private channel) and `mpim` are groups. */
function chatTypeOf(event: SpokenEvent): InboundMessage['chat']['type'] {
  // app_mention events carry no channel_type; direct message channel ids start with D.
  const channelType = event.channel_type ?? (event.channel.startsWith('D') ? 'im' : 'channel');
  return channelType === 'im' ? 'person' : 'group';
}

/** Slack escapes only these three characters in message text. */
function unescapeEntities(text: string): string {
  return text.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
}

/**
 * Renders Slack's `<…>` markup as plain text and collects the user mentions: `<@U1|ann>` → `@ann`
 * (`@U1` without a label), `<#C1|general>` → `#general`, `<!here>` → `@here`, `<url|label>` →
 * `label`, `<url>` → `url`.
 */
export function renderSlackText(
  text: string,
  context: Pick<NormalizeContext, 'botUserId' | 'botName'>,
): { text: string; mentions: Extract<Element, { type: 'mention' }>[] } {
  const mentions: Extract<Element, { type: 'mention' }>[] = [];
  const rendered = text.replace(/<([^<>]+)>/g, (_token, inner: string) => {
    const bar = inner.indexOf('|');
    const target = bar < 0 ? inner : inner.slice(0, bar);
    const label = bar < 0 ? undefined : inner.slice(bar + 1);
    if (target.startsWith('@')) {
      const userId = target.slice(1);
      const isBot = userId === context.botUserId;
      const name = label ?? (isBot ? context.botName : undefined);
      mentions.push({
        type: 'mention',
        user_id: userId,
        is_bot_self: isBot,
        ...(name === undefined ? {} : { name }),
      });
      return `@${name ?? userId}`;
    }
    if (target.startsWith('#')) return `#${label ?? target.slice(1)}`;
    if (target.startsWith('!')) {
      // <!here>, <!channel>, <!subteam^S1|@team>, <!date^…|fallback>: the label is what people see.
      return label ?? `@${target.slice(1).split('^')[0]}`;
    }
    return label ?? target;
  });
  return { text: unescapeEntities(rendered), mentions };
}

function fileElement(file: SlackFile): Element {
  const ids = {
    ...(file.url_private === undefined ? {} : { url: file.url_private }),
    ...(file.id === undefined ? {} : { file_id: file.id }),
  };
  if (file.mimetype?.startsWith('image/')) return { type: 'image', ...ids };
  // Voice clips recorded in Slack are files of subtype slack_audio.
  if (file.subtype === 'slack_audio') return { type: 'voice', ...ids };
  return { type: 'file', ...ids, ...(file.name === undefined ? {} : { name: file.name }) };
}

function senderNameOf(event: SpokenEvent): string | undefined {
  const profile = event.user_profile;
  const name = profile?.display_name || profile?.real_name || profile?.name || event.username;
  return name === '' ? undefined : name;
}

/**
 * A message event's `message` or `previous_message`, checked like a message event of its own (it
 * carries no channel: the event's).
 */
function innerMessage(
  event: Record<string, unknown>,
  key: 'message' | 'previous_message',
): { spoken: SpokenEvent; inner: Record<string, unknown> } {
  const inner = event[key];
  if (!isRecord(inner)) throw badField(`event.${key}`, 'expected an object');
  const { channel, channel_type } = event;
  return {
    spoken: checkSpokenEvent({ ...inner, type: 'message', channel, channel_type }, `event.${key}`),
    inner,
  };
}

function nonEmpty(value: unknown, path: string): string {
  if (typeof value !== 'string' || value === '') throw badField(path, 'expected a non-empty string');
  return value;
}

/**
 * A `reaction_added` / `reaction_removed` event on a message → a `reaction` event; null on a file,
 * or for the bot's own reaction.
 */
function reactionOf(event: Record<string, unknown>, context: NormalizeContext): InboundMessage | null {
  const { item } = event;
  if (!isRecord(item) || item.type !== 'message') return null;
  const user = nonEmpty(event.user, 'event.user');
  const reaction = nonEmpty(event.reaction, 'event.reaction');
  const eventTs = nonEmpty(event.event_ts, 'event.event_ts');
  const channel = nonEmpty(item.channel, 'event.item.channel');
  const ts = nonEmpty(item.ts, 'event.item.ts');
  if (user === context.botUserId) return null;
  const original = `${channel}:${ts}`;
  const removed = event.type === 'reaction_removed';
  return parseInboundMessage({
    id: context.messageId,
    platform: 'slack',
    channel: context.channelId,
    // Slack names no thread for a reaction: its session is the channel's.
    chat: { type: channel.startsWith('D') ? 'person' : 'group', id: channel },
    sender: { id: user, is_bot: user === context.botUserId },
    text: '',
    // The event's own time tells a reaction taken away and given again apart.
    platform_message_id: `${original}:${removed ? 'unreact' : 'react'}:${user}:${reaction}:${eventTs}`,
    received_at: context.receivedAt,
    raw: event,
    event: { type: 'reaction', message_id: original, emoji: reaction, ...(removed ? { removed: true } : {}) },
  });
}

/**
 * `message_changed` (an edit: the new text, with `message.edited` — Slack also sends it for link
 * unfurls, which are not edits) and `message_deleted` → the edited message as an `edited` or
 * `deleted` event. The sender is the message's author (Slack does not say who deleted it). Changes
 * of the bot's own messages (a streamed answer's edits) are none of the users' events: null.
 */
function changeOf(event: Record<string, unknown>, context: NormalizeContext): InboundMessage | null {
  const edit = event.subtype === 'message_changed';
  const { spoken, inner } = innerMessage(event, edit ? 'message' : 'previous_message');
  if (edit && !isRecord(inner.edited)) return null;
  // The bot's own messages change with every preview of a streamed answer: not the users' events.
  if (spoken.user === context.botUserId) return null;
  const original = spokenMessage(spoken, context, event);
  if (original === null) return null;
  const message_id = original.platform_message_id;
  if (edit) {
    const editedTs = (inner.edited as { ts?: unknown }).ts;
    // Each edit has its own `edited.ts`, so that a second edit of one message is no duplicate.
    const edition = typeof editedTs === 'string' ? editedTs : String(event.ts);
    return {
      ...original,
      platform_message_id: `${message_id}:edit:${edition}`,
      event: { type: 'edited', message_id },
    };
  }
  return {
    ...original,
    elements: [],
    text: '',
    mentions_bot: false,
    platform_message_id: `${message_id}:deleted`,
    event: { type: 'deleted', message_id },
  };
}

/**
 * Turns a Slack `message` or `app_mention` event (the `event` of an `event_callback`) into an
 * `InboundMessage`; `null` for events the gateway does not handle (other event types, joins,
 * messages without an author). Edits, deletions and reactions on messages become events
 * (docs/design.md §2 "Events"). Pure.
 *
 * `platform_message_id` is `<slack channel>:<ts>`, the message's identity in Slack: the same
 * message arrives twice when both `message.*` and `app_mention` are subscribed, and the channel
 * uses this id to count the second copy as a duplicate. `raw` keeps the event only, not the
 * envelope, whose legacy verification `token` must not land in the journal.
 */
export function normalizeSlackEvent(event: unknown, context: NormalizeContext): InboundMessage | null {
  if (!isRecord(event)) throw badField('event', 'expected an object');
  if (event.type === 'reaction_added' || event.type === 'reaction_removed') return reactionOf(event, context);
  if (event.type !== 'message' && event.type !== 'app_mention') return null;
  if (event.subtype === 'message_changed' || event.subtype === 'message_deleted')
    return changeOf(event, context);
  if (!SPOKEN_SUBTYPES.has(event.subtype as string | undefined)) return null;
  return spokenMessage(checkSpokenEvent(event), context, event);
}

/** A checked message event → the message it says; null without an author. */
function spokenMessage(spoken: SpokenEvent, context: NormalizeContext, raw: unknown): InboundMessage | null {
  const senderId = spoken.user ?? spoken.bot_id;
  if (senderId === undefined) return null;

  const { text, mentions } = renderSlackText(spoken.text ?? '', context);
  const files = (spoken.files ?? []).map(fileElement);
  const elements: Element[] = [
    ...(text === '' ? [] : [{ type: 'text' as const, text }]),
    ...mentions,
    ...files,
  ];
  const senderName = senderNameOf(spoken);
  return parseInboundMessage({
    id: context.messageId,
    platform: 'slack',
    channel: context.channelId,
    chat: {
      type: chatTypeOf(spoken),
      id: spoken.channel,
      ...(spoken.thread_ts === undefined ? {} : { thread: spoken.thread_ts }),
    },
    sender: {
      id: senderId,
      ...(senderName === undefined ? {} : { name: senderName }),
      is_bot:
        spoken.bot_id !== undefined || spoken.subtype === 'bot_message' || spoken.user === context.botUserId,
    },
    elements,
    text,
    mentions_bot: spoken.type === 'app_mention' || mentions.some((mention) => mention.is_bot_self),
    platform_message_id: `${spoken.channel}:${spoken.ts}`,
    received_at: context.receivedAt,
    raw,
  });
}
