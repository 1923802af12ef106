import { SwitchboardError } from '@switchboard/core';
import type { PostedTexts } from './posted-texts.js';

/**
 * The two platform calls an answer in a chat is made of, bound to one send or preview (its chat,
 * client and deadline). A channel implements them; `sendParts` and `showPreview` make its
 * `ChannelAdapter.send` and `preview` out of them, so that every channel streams alike.
 */
export interface MessageCalls<M> {
  /** Posts `message`; resolves with the ref of the new platform message (the `draft` of later calls). */
  post(message: M): Promise<string>;
  /** Sets the bot's platform message `ref` to show `message`; an edit that changes nothing succeeds. */
  edit(message: M, ref: string): Promise<void>;
  /** Whether `edit` can show `message`: false for a file, which a text message cannot become. Default: true. */
  editable?(message: M): boolean;
}

/** The parts a platform without idempotency keys was sent, for `sendParts` to skip on a retry. */
export interface RememberedParts {
  /** The parts posted so far, of every send of the channel (`createPostedTexts`). */
  posted: PostedTexts;
  /** The turn (else the message) the send answers: every try of one send gives the same. */
  answering: string;
}

/** A part as `PostedTexts` keys it: a text as is, another rendering as its JSON. */
const textOf = (part: unknown): string => (typeof part === 'string' ? part : JSON.stringify(part));

/**
 * Sends the rendered `parts` of an answer one after the other, so that they arrive in order; with
 * `draft` (the ref of a streamed answer's preview) the first editable part (a text) edits that
 * message, so the answer shows once; files are posted after it then. A failure ends the send: earlier parts stay, later ones are not sent. The
 * outbox tries a failed send again whole: with `remembered`, the parts this send posted before
 * are skipped then, so that they show once (an edit of the draft is made again, which changes
 * nothing); without it, the platform must take each post once itself.
 */
export async function sendParts<M>(
  parts: readonly M[],
  calls: MessageCalls<M>,
  draft?: string,
  remembered?: RememberedParts,
): Promise<void> {
  const draftIndex = draft === undefined ? -1 : parts.findIndex((part) => calls.editable?.(part) ?? true);
  for (const [index, part] of parts.entries()) {
    if (index === draftIndex && draft !== undefined) {
      await calls.edit(part, draft);
      continue;
    }
    if (remembered === undefined) {
      await calls.post(part);
      continue;
    }
    const posted = { answering: remembered.answering, index, text: textOf(part) };
    if (remembered.posted.has(posted)) continue;
    await calls.post(part);
    // The last part posted ends the send, which is then not tried again: nothing to remember.
    if (index < parts.length - 1) remembered.posted.add(posted);
  }
}

/**
 * Shows the answer so far: the first of `parts` (its rendering), so that what is past one
 * platform message shows once the answer is complete. Posts it when `draft` is undefined, else
 * edits `draft`; resolves with the ref of the message showing it. Empty `parts` (a blank text,
 * which the controller never previews) reject with a final SB_CHANNEL_SEND_FAILED.
 */
export async function showPreview<M>(
  parts: readonly M[],
  calls: MessageCalls<M>,
  draft: string | undefined,
): Promise<string> {
  const [first] = parts;
  if (first === undefined) {
    throw new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
      message: 'preview: the text is blank, nothing to show',
    });
  }
  if (draft === undefined) return calls.post(first);
  await calls.edit(first, draft);
  return draft;
}
