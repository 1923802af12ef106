import { SwitchboardError } from '@switchboard/core';

function badBody(problem: string): SwitchboardError {
  return new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: `body: ${problem}` });
}

function parseObject(json: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw badBody(`malformed JSON${what}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw badBody(`expected a JSON object${what}`);
  return value as Record<string, unknown>;
}

/**
 * Parses a verified request body: Events API callbacks are JSON; interactivity payloads arrive as
 * `payload=<JSON>` and slash commands as plain form fields. Throws SB_HTTP_BAD_REQUEST (400)
 * naming the problem. Pure.
 */
export function parseSlackBody(rawBody: string, contentType: string | undefined): Record<string, unknown> {
  if (contentType?.startsWith('application/x-www-form-urlencoded')) {
    const form = new URLSearchParams(rawBody);
    const payload = form.get('payload');
    return payload === null ? Object.fromEntries(form) : parseObject(payload, ' in the payload field');
  }
  return parseObject(rawBody, '');
}
