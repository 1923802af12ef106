import type { ServerResponse } from 'node:http';
import { SwitchboardError } from '@switchboard/core';

/** The data of one `event: reply`. */
export interface ReplyEvent {
  message_id: string;
  turn: string | null;
  text: string;
}

/** The data of one `event: reply.delta`: text a streamed answer gained since its previous delta. */
export interface ReplyDeltaEvent {
  message_id: string;
  turn: string | null;
  delta: string;
}

/** The bounds of the event streams; from the channel config (`max_event_streams`…). */
export interface SseLimits {
  /** Streams open at once on the channel. */
  maxStreams: number;
  /** Streams open at once on one session. */
  maxStreamsPerSession: number;
  /** Bytes a stream may have unsent before it is disconnected as a reader too slow. */
  maxBufferedBytes: number;
  /** Bytes all streams may have unsent together; past it the streams holding most are disconnected. */
  maxBufferedBytesTotal: number;
}

/**
 * Server-sent event streams per session (`GET {prefix}/sessions/{session_id}/events`). Each
 * reply the channel sends to a session goes to every stream open on it; a comment line every
 * `heartbeatMs` keeps proxies from closing an idle stream.
 *
 * Streams live for hours and are not counted toward `max_concurrent_requests`, so they have
 * bounds of their own: a number per channel and per session (past them, `open` throws 429), and
 * the bytes a stream may hold unsent. A client that does not read made the server buffer every
 * reply for ever; past `maxBufferedBytes` its connection is closed and it may reconnect. Many
 * such clients together are bounded by `maxBufferedBytesTotal`, not by `maxStreams` times
 * `maxBufferedBytes`: past it the streams holding most unsent are closed first.
 */
export interface SseHub {
  /**
   * Starts the event stream on `response` (headers included) until either side closes it.
   * Throws SB_HTTP_TOO_MANY_REQUESTS, before writing anything, when a limit is reached.
   */
  open(sessionId: string, response: ServerResponse): void;
  publish(sessionId: string, events: readonly ReplyEvent[]): void;
  /** Sends a piece of a streamed answer to the session's streams (docs/design.md §4 "Streaming"). */
  publishDelta(sessionId: string, event: ReplyDeltaEvent): void;
  /** Ends every stream (server shutdown: open streams would keep it from closing). */
  closeAll(): void;
}

/** The headers of an event stream; also the answer to `HEAD`. */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  // nginx buffers responses unless told otherwise, which would hold events back.
  'x-accel-buffering': 'no',
};

/** Streams end only when a client leaves; a free place is a matter of seconds, not of a second. */
const RETRY_AFTER_MS = 5000;

/** Every event on one line: JSON.stringify escapes newlines, which would end an SSE field. */
export function formatReplyEvent(event: ReplyEvent): string {
  return `event: reply\ndata: ${JSON.stringify(event)}\n\n`;
}

/** Like `formatReplyEvent`, for `event: reply.delta`. */
export function formatReplyDeltaEvent(event: ReplyDeltaEvent): string {
  return `event: reply.delta\ndata: ${JSON.stringify(event)}\n\n`;
}

export interface SseHubOptions {
  heartbeatMs: number;
  limits: SseLimits;
  /**
   * Called when a session gets its first stream, with the function that publishes to its
   * streams; returns the function called when its last stream closes. With several replicas,
   * the channel follows the replies the others send to the session.
   */
  follow?: (sessionId: string, publish: (events: readonly ReplyEvent[]) => void) => () => void;
}

/** One session's streams, and how to stop following it once the last one closes. */
interface SessionStreams {
  responses: Set<ServerResponse>;
  unfollow: () => void;
}

/** Creates the hub of one channel; its limits count that channel's streams only. */
export function createSseHub(options: SseHubOptions): SseHub {
  const { limits } = options;
  const streams = new Map<string, SessionStreams>();
  let open = 0;

  function remove(sessionId: string, response: ServerResponse): void {
    const session = streams.get(sessionId);
    if (session?.responses.delete(response) !== true) return;
    open -= 1;
    if (session.responses.size === 0) {
      streams.delete(sessionId);
      session.unfollow();
    }
  }

  function sessionOf(sessionId: string): SessionStreams {
    let session = streams.get(sessionId);
    if (session === undefined) {
      session = { responses: new Set(), unfollow: () => {} };
      streams.set(sessionId, session);
      if (options.follow !== undefined)
        session.unfollow = options.follow(sessionId, (events) => publish(sessionId, events));
    }
    return session;
  }

  function publish(sessionId: string, events: readonly ReplyEvent[]): void {
    write(sessionId, events.map(formatReplyEvent).join(''));
  }

  function write(sessionId: string, chunk: string): void {
    const session = streams.get(sessionId);
    if (session === undefined) return;
    for (const response of session.responses) send(response, chunk);
  }

  function refuseBeyondLimits(sessionId: string): void {
    const onSession = streams.get(sessionId)?.responses.size ?? 0;
    const message =
      open >= limits.maxStreams
        ? `${open} event streams are open on the channel (max_event_streams); retry later`
        : onSession >= limits.maxStreamsPerSession
          ? `${onSession} event streams are open on session ${sessionId} (max_event_streams_per_session); retry later`
          : undefined;
    if (message !== undefined) {
      throw new SwitchboardError('SB_HTTP_TOO_MANY_REQUESTS', { message, retryAfterMs: RETRY_AFTER_MS });
    }
  }

  // Bytes unsent per stream as last seen, and their sum. A count is refreshed at each write and
  // 'drain'; between them it can only be high, by less than the socket's high-water mark (a write
  // that returned true gets no 'drain'), so the sum is recounted before anyone is disconnected.
  // Recounting every stream on every write would cost streams × writes at each heartbeat.
  const unsent = new Map<ServerResponse, number>();
  let unsentTotal = 0;

  function forget(response: ServerResponse): void {
    unsentTotal -= unsent.get(response) ?? 0;
    unsent.delete(response);
  }

  function recount(response: ServerResponse): void {
    forget(response);
    // A 'drain' may still come after the stream closed and was forgotten.
    if (response.destroyed) return;
    unsentTotal += response.writableLength;
    unsent.set(response, response.writableLength);
  }

  function disconnect(response: ServerResponse): void {
    forget(response);
    response.destroy();
  }

  /** Past the total, disconnects the streams holding most unsent until it is met again. */
  function enforceTotal(): void {
    if (unsentTotal <= limits.maxBufferedBytesTotal) return;
    // A copy: recount deletes and re-adds, which a live iteration would visit again.
    for (const response of [...unsent.keys()]) recount(response);
    while (unsentTotal > limits.maxBufferedBytesTotal) {
      let largest: ServerResponse | undefined;
      let largestBytes = 0;
      for (const [response, bytes] of unsent) {
        if (bytes > largestBytes) [largest, largestBytes] = [response, bytes];
      }
      if (largest === undefined) return;
      disconnect(largest);
    }
  }

  /** Writes `chunk`, or closes the connection of a reader that lets too much pile up unsent. */
  function send(response: ServerResponse, chunk: string): void {
    if (response.destroyed) return;
    // `write` buffers whatever the socket does not take; its return value only advises.
    response.write(chunk);
    if (response.writableLength > limits.maxBufferedBytes) {
      disconnect(response);
      return;
    }
    recount(response);
    enforceTotal();
  }

  return {
    open(sessionId, response) {
      refuseBeyondLimits(sessionId);
      // Gone before its stream began: 'close' has fired already and would never remove it.
      if (response.closed) return;
      response.writeHead(200, SSE_HEADERS);
      sessionOf(sessionId).responses.add(response);
      open += 1;
      const heartbeat = setInterval(() => send(response, ': heartbeat\n\n'), options.heartbeatMs);
      response.on('drain', () => recount(response));
      response.once('close', () => {
        clearInterval(heartbeat);
        forget(response);
        remove(sessionId, response);
      });
      // The first bytes send the headers, so the client sees the stream open at once.
      send(response, ': connected\n\n');
    },

    publish,

    publishDelta(sessionId, event) {
      write(sessionId, formatReplyDeltaEvent(event));
    },

    closeAll() {
      for (const session of streams.values()) {
        // The connection too, once the stream's end is out: a stream is sent as keep-alive, and
        // its connection, idle a moment later, would hold the server's close for 72 s.
        for (const response of session.responses) response.end(() => response.destroy());
      }
    },
  };
}
