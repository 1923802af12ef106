import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type FakeFeishu, startFakeFeishu } from '../src/feishu.js';
import { decodeFrame, encodeFrame, headerOf } from '../src/feishu-long-connection.js';

let fake: FakeFeishu | undefined;
const clients: WebSocket[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.terminate();
  await fake?.close();
  fake = undefined;
});

/** A bare long-connection client: answers each event with code 200 and pings only when told. */
async function connect(url: string) {
  const client = new WebSocket(url);
  clients.push(client);
  const events: string[] = [];
  let pongs = 0;
  client.on('message', (data: Buffer) => {
    const frame = decodeFrame(new Uint8Array(data));
    if (frame.method === 0 && headerOf(frame, 'type') === 'pong') pongs += 1;
    if (frame.method !== 1) return;
    events.push(new TextDecoder().decode(frame.payload));
    client.send(encodeFrame({ ...frame, payload: new TextEncoder().encode('{"code":200}') }));
  });
  await once(client, 'open');
  return {
    events,
    /** Sends a ping and resolves with its pong. */
    async ping() {
      const before = pongs;
      client.send(
        encodeFrame({
          seqId: 0n,
          logId: 0n,
          service: 1,
          method: 0,
          headers: [{ key: 'type', value: 'ping' }],
        }),
      );
      while (pongs === before) await once(client, 'message');
    },
  };
}

describe("fake Feishu's long connection", () => {
  it('gives events only to connections whose client has sent a frame', async () => {
    const feishu = await startFakeFeishu();
    fake = feishu;
    const spoken = await connect(feishu.longConnection.endpoint().URL);
    await spoken.ping();
    const silent = await connect(feishu.longConnection.endpoint().URL);
    await feishu.longConnection.waitForConnections(2);

    for (const n of [1, 2, 3]) {
      const delivery = await feishu.longConnection.deliver(feishu.messageEvent({ text: `m${n}` }), {
        maxAttempts: 1,
        ackTimeoutMs: 2_000,
      });
      expect(delivery.attempts).toEqual([{ connection: 1, code: 200 }]);
    }
    expect(silent.events).toEqual([]);

    // Once it spoke, it gets its turn.
    await silent.ping();
    const served = new Set<number | undefined>();
    for (const n of [4, 5]) {
      const delivery = await feishu.longConnection.deliver(feishu.messageEvent({ text: `m${n}` }), {
        maxAttempts: 1,
      });
      expect(delivery.code).toBe(200);
      served.add(delivery.attempts[0]?.connection);
    }
    expect(served).toEqual(new Set([1, 2]));
    expect(silent.events).toHaveLength(1);
  });
});
