import { createSecretMasker } from '@switchboard/core';

/**
 * `text` with every one of `secrets` replaced by core's `SECRET_MASK`, also as the secret appears
 * inside a JSON string or percent-encoded (a proxy echoing the request URL). Secrets shorter than
 * core's `MIN_MASKED_CHARS` are left alone, as in every log line: they are no secrets worth the name.
 */
export function redact(text: string, secrets: readonly string[]): string {
  return createSecretMasker(secrets)(text);
}

/**
 * `value` with every string in it, at any depth of plain objects and arrays, passed through
 * `redact`: for the details of an error, which are logged and audited like its message.
 */
export function redactValue<T>(value: T, secrets: readonly string[]): T {
  const mask = createSecretMasker(secrets);
  const walk = (item: unknown): unknown => {
    if (typeof item === 'string') return mask(item);
    if (Array.isArray(item)) return item.map(walk);
    if (item !== null && typeof item === 'object' && Object.getPrototypeOf(item) === Object.prototype) {
      return Object.fromEntries(Object.entries(item).map(([key, entry]) => [key, walk(entry)]));
    }
    return item;
  };
  return walk(value) as T;
}
