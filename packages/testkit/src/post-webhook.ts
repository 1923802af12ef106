import { request as httpRequest } from 'node:http';

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

/**
 * POSTs to `target` with `headers`, announcing a 1 MiB JSON body but sending only `firstBytes`,
 * never the rest; resolves the answer the server gives anyway (a check of the headers that
 * refuses the call before reading the body).
 */
export function postUnfinished(
  target: string,
  headers: Record<string, string>,
  firstBytes = '{"text": "',
): Promise<{ status: number | undefined; body: unknown }> {
  return new Promise((resolve, reject) => {
    const call = httpRequest(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(1024 * 1024), ...headers },
    });
    call.on('error', reject);
    call.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () => {
        resolve({ status: response.statusCode, body: JSON.parse(text) });
        call.destroy();
      });
    });
    call.write(firstBytes);
  });
}
