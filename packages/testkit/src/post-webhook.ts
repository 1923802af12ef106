/** What a fake platform got back from a webhook call it made to the gateway. */
export interface WebhookAnswer {
  status: number;
  headers: Headers;
  /** The answer parsed as JSON, the text when it is not JSON, `null` when empty. */
  body: unknown;
}

/** POSTs `raw` to `target` with `headers`, as a platform delivers a webhook, and reads the answer. */
export async function postWebhook(
  target: string,
  raw: string,
  headers: Record<string, string>,
): Promise<WebhookAnswer> {
  const response = await fetch(target, { method: 'POST', headers, body: raw });
  const text = await response.text();
  let body: unknown = text === '' ? null : text;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {}
  return { status: response.status, headers: response.headers, body };
}
