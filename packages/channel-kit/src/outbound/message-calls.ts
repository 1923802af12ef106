import { SwitchboardError } from '@switchboard/core';

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
}

/**
 * Sends the rendered `parts` of an answer one after the other, so that they arrive in order; with
 * `draft` (the ref of a streamed answer's preview) the first part edits that message, so the
 * answer shows once. A failure ends the send: earlier parts stay, later ones are not sent.
 */
export async function sendParts<M>(
  parts: readonly M[],
  calls: MessageCalls<M>,
  draft?: string,
): Promise<void> {
  for (const [index, part] of parts.entries()) {
    if (index === 0 && draft !== undefined) await calls.edit(part, draft);
    else await calls.post(part);
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
