/**
 * The platform's own words in an error body, in the shapes JSON APIs use: `{ message }` (LINE),
 * `{ error: { message } }` (WhatsApp Cloud API, Graph API), `{ description }` (Telegram),
 * `{ error: "…" }`. Undefined when the body has none of them.
 */
export function platformMessageOf(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const { message, description, error } = body as Record<string, unknown>;
  if (typeof message === 'string') return message;
  if (typeof description === 'string') return description;
  if (typeof error === 'string') return error;
  if (error !== null && typeof error === 'object') {
    const inner = (error as Record<string, unknown>).message;
    if (typeof inner === 'string') return inner;
  }
  return undefined;
}
