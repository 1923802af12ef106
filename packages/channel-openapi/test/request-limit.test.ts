import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, createHarness } from './harness.js';
import { type RawClient, connectRaw, postHead } from './raw-client.js';

describe('limitConcurrentRequests', () => {
  let h: Harness;
  let clients: RawClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.socket.destroy();
    await h?.close();
  });

  describe('when as many clients as max_concurrent_requests are still sending their bodies', () => {
    it('does not count them: a whole request is answered 200, not 429', async () => {
      h = await createHarness({ channel: { max_concurrent_requests: 2 } });
      const base = await h.server.listen({ host: '127.0.0.1', port: 0 });
      const body = JSON.stringify({ session_id: 's1', user_id: 'u1', text: 'slow' });
      clients = await Promise.all([connectRaw(base), connectRaw(base)]);
      for (const client of clients)
        await client.write(`${postHead('/v1/messages', body.length)}${body.slice(0, 5)}`);

      const response = await fetch(`${base}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ session_id: 's2', user_id: 'u1', text: 'whole' }),
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ status: 'completed', replies: [{ text: 'whole' }] });
    });
  });
});
