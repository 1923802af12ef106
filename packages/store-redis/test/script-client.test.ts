import { createServer } from 'node:net';
import { isSwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { openScriptClient } from '../src/script-client.js';

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('openScriptClient', () => {
  it('connects to the cluster seeds it is given, not to a default Redis', async () => {
    const port = await closedPort();
    const opened = openScriptClient({
      url: [`redis://127.0.0.1:${port}`],
      client: undefined,
      prefix: 'sb-script-client',
      retryAfterMs: 250,
    });
    const failure = await opened.then(
      async (client) => {
        client.client.disconnect();
        return null;
      },
      (err: unknown) => err,
    );
    expect(isSwitchboardError(failure, 'SB_STORE_UNAVAILABLE')).toBe(true);
  });
});
