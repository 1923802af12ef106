import type { ServerResponse } from 'node:http';
import { type Handoff, type HandoffStore, type Logger, SwitchboardError } from '@switchboard/core';
import { entryView, handoffView } from '../admin/handoff-view.js';

/** Bounds of the console's conversation streams. */
export interface HandoffStreamLimits {
  /**
   * Streams open at once on this replica; past it, 429. One tenant's token may hold half of them,
   * so that a tenant cannot take every stream from the others and the gateway's operators.
   */
  maxStreams: number;
  /** How often each stream reads the store. */
  pollMs: number;
  /** Unsent bytes past which a stream is closed as a reader too slow (it may reconnect). */
  maxBufferedBytes: number;
}

const HEARTBEAT_EVERY_POLLS = 30;
const ENTRIES_PER_POLL = 100;

/**
 * `GET /admin/sessions/{key}/events`: a session's handoff and transcript as server-sent events,
 * for the console's conversation view. Each stream reads the store every `pollMs` — the store,
 * not this replica's memory, so that a message held on any replica and a reply sent from any
 * replica show whichever replica serves the console. `event: handoff` (the handoff, or null)
 * comes first and whenever it changes; `event: entry` for each transcript entry after `after`.
 * A handoff that ended and began again numbers its entries from 1: the `handoff` event with its
 * new `started_at` tells the reader to start over, and the stream sends them from the first.
 */
export interface HandoffEventStreams {
  /**
   * Streams `session` to `response`; `stillAllowed` is asked with the handoff each read found,
   * before anything of it is sent, and the stream ends once it says no (the caller's token was
   * removed or changed by a reload, the session is no longer the caller's tenant's).
   */
  open(
    session: string,
    afterSeq: number,
    response: ServerResponse,
    stillAllowed: (handoff: Handoff | null) => boolean,
    tenant: string | null,
  ): void;
  /** Ends every stream (the server is closing). */
  closeAll(): void;
}

export function createHandoffEventStreams(
  store: HandoffStore,
  limits: HandoffStreamLimits,
  logger: Logger,
): HandoffEventStreams {
  const open = new Set<() => void>();
  /** Streams open per tenant token (a global token's are counted in `open` only). */
  const byTenant = new Map<string, number>();
  const tenantCap = Math.max(1, Math.floor(limits.maxStreams / 2));

  return {
    open(session, afterSeq, response, stillAllowed, tenant) {
      if (open.size >= limits.maxStreams) {
        throw new SwitchboardError('SB_HTTP_TOO_MANY_REQUESTS', {
          message: `${limits.maxStreams} conversation streams are open on this replica; close one`,
          retryAfterMs: 5000,
        });
      }
      const held = tenant === null ? 0 : (byTenant.get(tenant) ?? 0);
      if (tenant !== null && held >= tenantCap) {
        throw new SwitchboardError('SB_HTTP_TOO_MANY_REQUESTS', {
          message: `${tenantCap} conversation streams of tenant ${tenant} are open on this replica; close one`,
          retryAfterMs: 5000,
        });
      }
      if (tenant !== null) byTenant.set(tenant, held + 1);
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
      });
      let after = afterSeq;
      let lastHandoff: string | undefined;
      let startedAt: number | null | undefined;
      let polls = 0;
      let timer: NodeJS.Timeout | undefined;
      let closed = false;

      const close = () => {
        if (closed) return;
        closed = true;
        clearTimeout(timer);
        open.delete(close);
        if (tenant !== null) {
          const left = (byTenant.get(tenant) ?? 1) - 1;
          if (left === 0) byTenant.delete(tenant);
          else byTenant.set(tenant, left);
        }
        response.end();
      };
      open.add(close);
      response.on('close', close);

      const send = (event: string, data: unknown) => {
        response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      };

      const poll = async () => {
        try {
          const handoff = await store.get(session);
          if (closed) return;
          if (!stillAllowed(handoff)) {
            close();
            return;
          }
          const view = handoff === null ? null : handoffView(handoff);
          const json = JSON.stringify(view);
          if (json !== lastHandoff) {
            // Another handoff than the one whose entries were sent: its entries start over.
            const began = handoff?.startedAt ?? null;
            if (startedAt !== undefined && began !== startedAt) after = 0;
            startedAt = began;
            lastHandoff = json;
            send('handoff', view);
          }
          if (handoff !== null && handoff.lastSeq > after) {
            const entries = await store.transcript(session, after, ENTRIES_PER_POLL);
            if (closed) return;
            for (const entry of entries) send('entry', entryView(entry));
            after = entries.at(-1)?.seq ?? after;
          }
          polls += 1;
          if (polls % HEARTBEAT_EVERY_POLLS === 0) response.write(': keep-alive\n\n');
          if (response.writableLength > limits.maxBufferedBytes) {
            logger.warn({ session }, 'conversation stream closed: the reader is too slow');
            close();
            return;
          }
        } catch (err) {
          logger.warn({ err, session }, 'conversation stream could not read the store; trying again');
        }
        if (!closed) timer = setTimeout(() => void poll(), limits.pollMs);
      };
      void poll();
    },

    closeAll() {
      for (const close of [...open]) close();
    },
  };
}
