/** A JSON body read as an object, or why it is not one. */
export type JsonObjectResult =
  | { ok: true; value: Record<string, unknown> }
  | {
      ok: false;
      problem:
        | 'malformed JSON'
        | 'expected a JSON object'
        | 'key __proto__ or constructor.prototype not allowed';
    };

/** Whether a key could reach an object's prototype once the value is copied or merged. */
function isPrototypeKey(key: string, value: unknown): boolean {
  return (
    key === '__proto__' ||
    (key === 'constructor' &&
      typeof value === 'object' &&
      value !== null &&
      Object.hasOwn(value, 'prototype'))
  );
}

/**
 * Parses a webhook's raw body, which every platform sends as one JSON object: an array, a
 * string or a number is refused like malformed JSON, and so are `__proto__` and
 * `constructor.prototype` keys, as fastify's own JSON parser refuses them (prototype poisoning
 * once a library merges the body into another object). Never throws, so the caller picks the
 * answer (400, or 200 for platforms that redeliver anything else forever).
 */
export function parseJsonObject(rawBody: string): JsonObjectResult {
  let value: unknown;
  let prototypeKey = false;
  try {
    value = JSON.parse(rawBody, (key, child: unknown) => {
      if (isPrototypeKey(key, child)) prototypeKey = true;
      return child;
    });
  } catch {
    return { ok: false, problem: 'malformed JSON' };
  }
  if (prototypeKey) return { ok: false, problem: 'key __proto__ or constructor.prototype not allowed' };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, problem: 'expected a JSON object' };
  }
  return { ok: true, value: value as Record<string, unknown> };
}
