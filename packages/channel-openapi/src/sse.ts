import type { ServerResponse } from 'node:http';

/** The data of one `event: reply`. */
export interface ReplyEvent {
  message_id: string;
  turn: string | null;
  text: string;
}

/**
 * Server-sent event streams per session (`GET {prefix}/sessions/{session_id}/events`). Each
 * reply the channel sends to a session goes to every stream open on it; a comment line every
 * `heartbeatMs` keeps proxies from closing an idle stream.
 */
export interface SseHub {
  /** Starts the event stream on `response` (headers included) until either side closes it. */
  open(sessionId: string, response: ServerResponse): void;
  publish(sessionId: string, events: readonly ReplyEvent[]): void;
  /** Ends every stream (server shutdown: open streams would keep it from closing). */
  closeAll(): void;
}

/** Every event on one line: JSON.stringify escapes newlines, which would end an SSE field. */
export function formatReplyEvent(event: ReplyEvent): string {
  return `event: reply\ndata: ${JSON.stringify(event)}\n\n`;
}

export function createSseHub(options: { heartbeatMs: number }): SseHub {
  const streams = new Map<string, Set<ServerResponse>>();

  function remove(sessionId: string, response: ServerResponse): void {
    const set = streams.get(sessionId);
    set?.delete(response);
    if (set?.size === 0) streams.delete(sessionId);
  }

  return {
    open(sessionId, response) {
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        // nginx buffers responses unless told otherwise, which would hold events back.
        'x-accel-buffering': 'no',
      });
      // The first bytes send the headers, so the client sees the stream open at once.
      response.write(': connected\n\n');
      const set = streams.get(sessionId) ?? new Set();
      set.add(response);
      streams.set(sessionId, set);
      const heartbeat = setInterval(() => response.write(': heartbeat\n\n'), options.heartbeatMs);
      response.once('close', () => {
        clearInterval(heartbeat);
        remove(sessionId, response);
      });
    },

    publish(sessionId, events) {
      const set = streams.get(sessionId);
      if (set === undefined) return;
      const chunk = events.map(formatReplyEvent).join('');
      for (const response of set) response.write(chunk);
    },

    closeAll() {
      for (const set of streams.values()) {
        for (const response of set) response.end();
      }
    },
  };
}
