/** A JSON body read as an object, or why it is not one. */
export type JsonObjectResult =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; problem: 'malformed JSON' | 'expected a JSON object' };

/**
 * Parses a webhook's raw body, which every platform sends as one JSON object: an array, a
 * string or a number is refused like malformed JSON. Never throws, so the caller picks the
 * answer (400, or 200 for platforms that redeliver anything else forever).
 */
export function parseJsonObject(rawBody: string): JsonObjectResult {
  let value: unknown;
  try {
    value = JSON.parse(rawBody);
  } catch {
    return { ok: false, problem: 'malformed JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, problem: 'expected a JSON object' };
  }
  return { ok: true, value: value as Record<string, unknown> };
}
