import type { IncomingMessage } from 'node:http';

/**
 * The JSON object a fake's request carried; `null` when the body is empty, not JSON or not an
 * object: each fake answers such a call as its platform would.
 */
// biome-ignore lint/suspicious/noExplicitAny: platform payloads are read freely by fakes and tests
export function readJsonBody(request: IncomingMessage): Promise<Record<string, any> | null> {
  return new Promise((resolve) => {
    // Chunks joined before decoding: a character's bytes may straddle two of them.
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      try {
        const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const isObject = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
        resolve(isObject ? (parsed as Record<string, unknown>) : null);
      } catch {
        resolve(null);
      }
    });
  });
}
