/**
 * A W3C `traceparent` header value: version, trace id, parent span id, flags. A message carries
 * one (`InboundMessage.traceparent`) so its trace follows it to whichever replica runs its turn.
 */
export const TRACEPARENT_PATTERN = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The trace id in a W3C `traceparent`, or null when there is none. */
export function traceIdOf(traceparent: string | undefined): string | null {
  return traceparent === undefined ? null : traceparent.slice(3, 35);
}
