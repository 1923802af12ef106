import { parseJsonObject } from '@switchboard/channel-kit';
import { SwitchboardError } from '@switchboard/core';

/** A webhook body whose events are yet to be read one by one (`normalizeLineEvent`). */
export interface LineWebhookBody {
  /** The bot's user id. */
  destination?: string;
  events: unknown[];
}

/**
 * Reads a verified webhook body: a JSON object with an `events` array (empty for the console's
 * "Verify" call). Throws SB_HTTP_BAD_REQUEST naming the problem. Pure.
 */
export function parseLineBody(rawBody: string): LineWebhookBody {
  const parsed = parseJsonObject(rawBody);
  if (!parsed.ok) throw new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: `body: ${parsed.problem}` });
  const { destination, events } = parsed.value;
  if (!Array.isArray(events)) {
    throw new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: 'body.events: expected an array' });
  }
  return { ...(typeof destination === 'string' ? { destination } : {}), events };
}
