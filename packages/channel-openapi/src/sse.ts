import type { ServerResponse } from 'node:http';
import { type Attachment, type Logger, SwitchboardError } from '@switchboard/core';

/** The data of one `event: reply`. */
export interface ReplyEvent {
  message_id: string;
  turn: string | null;
  text?: string;
  attachments?: Attachment[];
}

/** The data of one `event: reply.delta`: text a streamed answer gained since its previous delta. */
export interface ReplyDeltaEvent {
  message_id: string;
  turn: string | null;
  delta: string;
}

/**
 * The data of one `event: reply.omitted`: sent instead of a `reply` or `reply.delta` event that
 * alone is larger than `max_event_stream_buffer`, which no stream could hold. The client reads
 * the message's replies with `GET {prefix}/messages/{message_id}`.
 */
export interface ReplyOmittedEvent {
  message_id: string;
  turn: string | null;
  /** The event left out: `reply` or `reply.delta`. */
  event: 'reply' | 'reply.delta';
  /** Its size in bytes, as it would have been written. */
  bytes: number;
}

/** The bounds of the event streams; from the channel config (`max_event_streams`…). */
export interface SseLimits {
  /** Streams open at once on the channel. */
  maxStreams: number;
  /** Streams open at once on one session. */
  maxStreamsPerSession: number;
  /**
   * Bytes a stream may still have unsent from earlier writes when the next is written; past it
   * the stream is disconnected as a reader too slow. Also the largest event sent whole.
   */
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
 * reply for ever. What is judged is the backlog, the bytes of earlier writes the client has not
 * taken yet, before each write: a reader that keeps up has taken them, whatever the size of the
 * event being written. Past `maxBufferedBytes` of backlog the connection is closed and the
 * client may reconnect, so a stream holds at most that plus one write. An event larger than
 * `maxBufferedBytes` on its own would be cut for any reader: a `reply.omitted` event naming the
 * message goes instead. Many slow clients together are bounded by `maxBufferedBytesTotal`, not
 * by `maxStreams` times `maxBufferedBytes`: past it the streams holding most unsent are closed
 * first. Every disconnection and every omitted event is logged (warn).
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

/** Like `formatReplyEvent`, for `event: reply.omitted`. */
export function formatReplyOmittedEvent(event: ReplyOmittedEvent): string {
  return `event: reply.omitted\ndata: ${JSON.stringify(event)}\n\n`;
}

export interface SseHubOptions {
  heartbeatMs: number;
  limits: SseLimits;
  /** Where disconnected readers and omitted events are reported. */
  logger: Logger;
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
  const { limits, logger } = options;
  const streams = new Map<string, SessionStreams>();
  /** The session of each open stream, for the logs. */
  const sessionOfStream = new Map<ServerResponse, string>();
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

  /**
   * `formatted` (the event `event` of `name`), or the `reply.omitted` event that goes instead
   * when it alone is larger than a stream may hold: written whole, it would cut every reader.
   */
  function fitted(
    sessionId: string,
    event: { message_id: string; turn: string | null },
    name: ReplyOmittedEvent['event'],
    formatted: string,
  ): string {
    const bytes = Buffer.byteLength(formatted);
    if (bytes <= limits.maxBufferedBytes) return formatted;
    logger.warn(
      {
        session: sessionId,
        messageId: event.message_id,
        event: name,
        bytes,
        maxBytes: limits.maxBufferedBytes,
      },
      'event too large for the event streams: sent as reply.omitted',
    );
    return formatReplyOmittedEvent({ message_id: event.message_id, turn: event.turn, event: name, bytes });
  }

  function publish(sessionId: string, events: readonly ReplyEvent[]): void {
    const session = streams.get(sessionId);
    if (session === undefined) return;
    const chunk = events.map((event) => fitted(sessionId, event, 'reply', formatReplyEvent(event))).join('');
    writeTo([...session.responses], chunk);
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

  function disconnect(response: ServerResponse, fields: object, message: string): void {
    logger.warn({ session: sessionOfStream.get(response), ...fields }, message);
    forget(response);
    response.destroy();
  }

  /** Closes a stream whose client has not taken what earlier writes left past the bound. */
  function cutIfBehind(response: ServerResponse): void {
    if (response.destroyed || response.writableLength <= limits.maxBufferedBytes) return;
    disconnect(
      response,
      { unsentBytes: response.writableLength, maxBytes: limits.maxBufferedBytes },
      'event stream disconnected: its reader is too slow',
    );
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
      disconnect(
        largest,
        {
          unsentBytes: largestBytes,
          totalUnsentBytes: unsentTotal,
          maxTotalBytes: limits.maxBufferedBytesTotal,
        },
        'event stream disconnected: the streams hold too much unsent',
      );
    }
  }

  /**
   * Writes `chunk` to each of `responses` whose client keeps up. The backlog is judged before
   * any of them is written: the chunk itself, which no client could have taken yet, never
   * counts against a stream, nor one stream's write against another's.
   */
  function writeTo(responses: readonly ServerResponse[], chunk: string): void {
    for (const response of responses) cutIfBehind(response);
    enforceTotal();
    for (const response of responses) {
      if (response.destroyed) continue;
      // `write` buffers whatever the socket does not take; its return value only advises.
      response.write(chunk);
      recount(response);
    }
  }

  return {
    open(sessionId, response) {
      refuseBeyondLimits(sessionId);
      // Gone before its stream began: 'close' has fired already and would never remove it.
      if (response.closed) return;
      response.writeHead(200, SSE_HEADERS);
      sessionOf(sessionId).responses.add(response);
      sessionOfStream.set(response, sessionId);
      open += 1;
      const heartbeat = setInterval(() => writeTo([response], ': heartbeat\n\n'), options.heartbeatMs);
      response.on('drain', () => recount(response));
      response.once('close', () => {
        clearInterval(heartbeat);
        forget(response);
        sessionOfStream.delete(response);
        remove(sessionId, response);
      });
      // The first bytes send the headers, so the client sees the stream open at once.
      writeTo([response], ': connected\n\n');
    },

    publish,

    publishDelta(sessionId, event) {
      const session = streams.get(sessionId);
      if (session === undefined) return;
      writeTo([...session.responses], fitted(sessionId, event, 'reply.delta', formatReplyDeltaEvent(event)));
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
