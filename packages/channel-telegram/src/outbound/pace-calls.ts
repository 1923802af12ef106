import type { PacedChat, SendPacer } from '@switchboard/core';
import type { Transformer } from 'grammy';

/**
 * The Bot API methods that post into a chat, and so count against Telegram's limits: sends and
 * the edits of a message being streamed share the same buckets.
 */
export const PACED_METHODS: ReadonlySet<string> = new Set(['sendMessage', 'editMessageText']);

/** Groups, supergroups and channels have negative ids (or an `@username`); private chats positive. */
export function pacedChatOfId(chatId: number | string): PacedChat {
  const id = String(chatId);
  return { id, group: id.startsWith('-') || id.startsWith('@') };
}

/** Never aborts: a call made without a signal waits as long as its pacing takes. */
const NEVER = new AbortController().signal;

/**
 * A Bot API transformer that holds each call of `PACED_METHODS` back until `pacer` lets it into
 * its chat. Installed inside auto-retry, so a call auto-retry repeats after a 429 is paced again:
 * a retry that skipped the buckets would take a token the pacer never counted, and the next call
 * into that chat would meet a 429 in turn. A signal's abort during the wait rejects the call
 * with its reason.
 */
export function paceCalls(pacer: SendPacer): Transformer {
  return async (prev, method, payload, signal) => {
    const chatId = (payload as { chat_id?: unknown } | undefined)?.chat_id;
    if (PACED_METHODS.has(method) && (typeof chatId === 'number' || typeof chatId === 'string')) {
      // grammY types its signal with a shim of its own; at run time it is the caller's AbortSignal.
      await pacer.pace(pacedChatOfId(chatId), (signal as unknown as AbortSignal | undefined) ?? NEVER);
    }
    return prev(method, payload, signal);
  };
}
