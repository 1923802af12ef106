import { parseJsonObject } from '@switchboard/channel-kit';
import { SwitchboardError } from '@switchboard/core';

function parseObject(json: string, what: string): Record<string, unknown> {
  const parsed = parseJsonObject(json);
  if (!parsed.ok) {
    throw new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: `body: ${parsed.problem}${what}` });
  }
  return parsed.value;
}

/**
 * Parses a verified request body: Events API callbacks are JSON; interactivity payloads arrive as
 * `payload=<JSON>` and slash commands as plain form fields. Throws SB_HTTP_BAD_REQUEST (400)
 * naming the problem. Pure.
 */
export function parseSlackBody(rawBody: string, contentType: string | undefined): Record<string, unknown> {
  if (contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    const form = new URLSearchParams(rawBody);
    const payload = form.get('payload');
    return payload === null ? Object.fromEntries(form) : parseObject(payload, ' in the payload field');
  }
  return parseObject(rawBody, '');
}
