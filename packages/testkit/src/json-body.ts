import type { IncomingMessage } from 'node:http';

/**
 * The JSON object a fake's request carried; `{}` when the body is empty, not JSON or not an
 * object: fakes answer such a call as the platform would, from the fields it lacks.
 */
// biome-ignore lint/suspicious/noExplicitAny: platform payloads are read freely by fakes and tests
export function readJsonBody(request: IncomingMessage): Promise<Record<string, any>> {
  return new Promise((resolve) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => {
      raw += chunk.toString();
    });
    request.on('end', () => {
      try {
        const parsed: unknown = raw === '' ? {} : JSON.parse(raw);
        resolve(typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {});
      } catch {
        resolve({});
      }
    });
  });
}
