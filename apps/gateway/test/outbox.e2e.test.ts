import { metricValue, metricValueAt, scrapeMetrics } from '@switchboard/testkit/prometheus';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import {
  type ServeProcess,
  eventually,
  get,
  post,
  startServe,
  tempDir,
  testConfig,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const cleanup = useCleanups();

const alice = { id: 720_000_001, first_name: 'Alice' };
const bob = { id: 720_000_002, first_name: 'Bob' };
const carol = { id: 720_000_003, first_name: 'Carol' };

const DOWN = { status: 502, description: 'Bad Gateway' } as const;

function privateMessage(fake: FakeTelegram, user: { id: number; first_name: string }, text: string) {
  return {
    message: fake.message({
      from: { ...user, is_bot: false },
      chat: { id: user.id, first_name: user.first_name, type: 'private' },
      text,
    }),
  };
}

/** The texts the fake accepted (answered 200) for one chat, in order. */
function textsTo(fake: FakeTelegram, chatId: number): string[] {
  return fake
    .sentMessages()
    .filter((sent) => sent.body.chat_id === chatId)
    .map((sent) => String(sent.body.text));
}

/** The texts the backend was asked about, one entry per request. */
function asked(backend: FakePipeline): string[] {
  return backend.requests.map((request) => request.text);
}

/**
 * A gateway on a SQLite file with a Telegram channel on `fake` and an `http` pipeline on
 * `backend`; `outbound` is the channel's `outbound:` block.
 */
async function setup(fake: FakeTelegram, backend: FakePipeline | null, outbound: string, extra = '') {
  const dir = tempDir();
  const pipeline =
    backend === null ? '{ id: bot, type: echo }' : `{ id: bot, type: http, url: "${backend.url}" }`;
  const configPath = writeConfig(
    dir,
    testConfig(
      dir,
      `concurrency: { pipeline: 2 }
channels:
  - { id: tg, type: telegram, token: "${fake.token}", api_root: "${fake.url}", outbound: ${outbound} }
pipelines: [${pipeline}]
routing: { default: bot }
${extra}`,
    ),
  );
  return async (): Promise<ServeProcess> => {
    const gateway = await startServe({ dir, configPath });
    cleanup(() => gateway.stop('SIGKILL'));
    return gateway;
  };
}

async function fakes(): Promise<{ fake: FakeTelegram; backend: FakePipeline }> {
  const fake = await startFakeTelegram();
  cleanup(() => fake.close());
  const backend = await startFakePipeline();
  cleanup(() => backend.close());
  return { fake, backend };
}

const OUTAGE_MS = 20_000;
const FAST_RETRY = '{ send_timeout: 2s, retry: { base_delay: 200ms, max_delay: 1s } }';

describe('reply outbox (switchboard serve against a fake Telegram)', () => {
  describe('when the platform is down for 20 s', () => {
    it('keeps the replies in the outbox and delivers them after, in order, each backend call made once, later turns running meanwhile', {
      timeout: 90_000,
    }, async () => {
      const { fake, backend } = await fakes();
      const gateway = await (await setup(fake, backend, FAST_RETRY))();
      fake.failAll('sendMessage', DOWN);
      const upAt = Date.now() + OUTAGE_MS;

      fake.pushUpdate(privateMessage(fake, alice, 'one'));
      await eventually(() => asked(backend).includes('one'));
      // Alice's next turn runs while the reply to her first waits in the outbox.
      fake.pushUpdate(privateMessage(fake, alice, 'two'));
      fake.pushUpdate(privateMessage(fake, bob, 'three'));
      await eventually(() => asked(backend).length === 3);
      expect(asked(backend).sort()).toEqual(['one', 'three', 'two']);
      await eventually(
        async () => (await metricValueAt(gateway.url, 'switchboard_outbox_pending{channel="tg"}')) === 3,
      );
      await eventually(
        async () =>
          (await metricValueAt(gateway.url, 'switchboard_deliveries_total{channel="tg",outcome="retried"}')) >
          0,
      );

      // The outage itself: the platform stays down for its whole length.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, upAt - Date.now())));
      expect(fake.sentMessages()).toEqual([]);
      fake.failAll('sendMessage', null);

      await eventually(() => textsTo(fake, alice.id).length === 2 && textsTo(fake, bob.id).length === 1);
      expect(textsTo(fake, alice.id)).toEqual(['echo: one', 'echo: two']);
      expect(textsTo(fake, bob.id)).toEqual(['echo: three']);
      expect(asked(backend)).toHaveLength(3);
      await eventually(
        async () => (await metricValueAt(gateway.url, 'switchboard_outbox_pending{channel="tg"}')) === 0,
      );
      expect(
        await metricValueAt(gateway.url, 'switchboard_deliveries_total{channel="tg",outcome="delivered"}'),
      ).toBe(3);
      expect((await get(`${gateway.url}/admin/dead-letters`)).body.items).toEqual([]);
    });
  });

  describe('when sends hang and the pool has 2 slots', () => {
    it('answers a third session while 2 sends hang, abandons them at their deadline and sends them again', {
      timeout: 60_000,
    }, async () => {
      const fake = await startFakeTelegram();
      cleanup(() => fake.close());
      const gateway = await (await setup(fake, null, '{ send_timeout: 5s, retry: { base_delay: 200ms } }'))();
      fake.failNext('sendMessage', 2, { hang: true });
      fake.pushUpdate(privateMessage(fake, alice, 'hello'));
      fake.pushUpdate(privateMessage(fake, bob, 'hi'));
      await eventually(() => fake.callsOf('sendMessage').length === 2);
      const hungAt = Date.now();

      // Both slots would be taken if the sends held them; the sends are outside the turns.
      fake.pushUpdate(privateMessage(fake, carol, 'anyone?'));
      await eventually(() => textsTo(fake, carol.id).length > 0, 4_000);
      expect(Date.now() - hungAt).toBeLessThan(5_000);
      expect(textsTo(fake, alice.id)).toEqual([]);

      await eventually(() => textsTo(fake, alice.id).length > 0 && textsTo(fake, bob.id).length > 0, 15_000);
      expect(textsTo(fake, alice.id)).toEqual(['hello']);
      expect(textsTo(fake, bob.id)).toEqual(['hi']);
      expect(fake.callsOf('sendMessage').filter((call) => call.body.chat_id === alice.id)).toHaveLength(2);
      expect(gateway.logs.some((line) => line.msg === 'send failed, retrying')).toBe(true);
      expect((await get(`${gateway.url}/admin/dead-letters`)).body.items).toEqual([]);
    });
  });

  describe('when the process is killed with replies in the outbox', () => {
    it('delivers them after the restart, each once', {
      timeout: 90_000,
    }, async () => {
      const { fake, backend } = await fakes();
      const start = await setup(fake, backend, FAST_RETRY);
      const first = await start();
      fake.failAll('sendMessage', DOWN);
      fake.pushUpdate(privateMessage(fake, alice, 'one'));
      fake.pushUpdate(privateMessage(fake, bob, 'two'));
      fake.pushUpdate(privateMessage(fake, carol, 'three'));
      await eventually(
        async () => (await metricValueAt(first.url, 'switchboard_outbox_pending{channel="tg"}')) === 3,
      );
      first.child.kill('SIGKILL');
      await first.exited;
      expect(fake.sentMessages()).toEqual([]);

      fake.failAll('sendMessage', null);
      const second = await start();
      await eventually(() => fake.sentMessages().length === 3);
      expect(textsTo(fake, alice.id)).toEqual(['echo: one']);
      expect(textsTo(fake, bob.id)).toEqual(['echo: two']);
      expect(textsTo(fake, carol.id)).toEqual(['echo: three']);
      // A turn whose journal removal had not committed at the kill ran again (at least once,
      // docs/design.md §2 "Durability"): the same request, whose answer the outbox held already.
      expect(new Set(backend.requests.map((request) => request.id)).size).toBe(3);
      // Settled: nothing queued, running or waiting to be sent. A re-run whose first delivery was
      // sent already finds its id remembered by the outbox, and sends nothing again.
      await eventually(async () => {
        const metrics = await scrapeMetrics(second.url);
        const queued = metricValue(metrics, 'switchboard_queue_pending{scope="replica"}');
        const running = metricValue(metrics, 'switchboard_inflight{scope="replica"}');
        const unsent = metricValue(metrics, 'switchboard_outbox_pending{channel="tg"}');
        return queued === 0 && running === 0 && unsent === 0;
      });
      expect(
        await metricValueAt(second.url, 'switchboard_deliveries_total{channel="tg",outcome="delivered"}'),
      ).toBe(3);
      expect(fake.sentMessages()).toHaveLength(3);
    });
  });

  describe('when SIGTERM arrives with store: memory and replies queued behind a send that hangs', () => {
    it('sends them all within the drain before it exits', {
      timeout: 90_000,
    }, async () => {
      const fake = await startFakeTelegram();
      cleanup(() => fake.close());
      const dir = tempDir();
      const configPath = writeConfig(
        dir,
        `server: { host: 127.0.0.1, port: 0 }
store: { kind: memory }
shutdown: { drain_timeout: 30s }
channels:
  - { id: tg, type: telegram, token: "${fake.token}", api_root: "${fake.url}", outbound: { send_timeout: 8s, retry: { base_delay: 200ms } } }
pipelines: [{ id: bot, type: echo }]
routing: { default: bot }`,
      );
      const gateway = await startServe({ dir, configPath });
      cleanup(() => gateway.stop('SIGKILL'));
      fake.failNext('sendMessage', 1, { hang: true });
      // One turn per message: each is answered before the next arrives, so three deliveries wait
      // in one chat, behind the first send.
      for (const [index, text] of ['one', 'two', 'three'].entries()) {
        fake.pushUpdate(privateMessage(fake, alice, text));
        await eventually(
          async () =>
            (await metricValueAt(gateway.url, 'switchboard_outbox_pending{channel="tg"}')) === index + 1,
        );
      }
      expect(fake.callsOf('sendMessage')).toHaveLength(1);

      expect(await gateway.stop('SIGTERM')).toBe(0);
      expect(textsTo(fake, alice.id)).toEqual(['one', 'two', 'three']);
      expect(
        gateway.logs.some((line) => line.msg === 'drain timeout: replies still queued are dropped'),
      ).toBe(false);
    });
  });

  describe('when a delivery is given up and its dead letter replayed', () => {
    it('sends the stored replies without asking the backend again, and answers 409 to a second replay', {
      timeout: 60_000,
    }, async () => {
      const { fake, backend } = await fakes();
      const gateway = await (
        await setup(
          fake,
          backend,
          '{ send_timeout: 1s, max_age: 2s, retry: { base_delay: 200ms, max_delay: 500ms } }',
        )
      )();
      fake.failAll('sendMessage', DOWN);
      fake.pushUpdate(privateMessage(fake, alice, 'lost?'));
      const [deadLetter] = await eventually(async () => {
        const { body } = await get(`${gateway.url}/admin/dead-letters`);
        return body.items?.length > 0 && body.items;
      });
      expect(deadLetter).toMatchObject({ reason: 'delivery_failed', chat_id: String(alice.id) });
      expect(
        await metricValueAt(gateway.url, 'switchboard_deliveries_total{channel="tg",outcome="failed"}'),
      ).toBe(1);

      fake.failAll('sendMessage', null);
      const replayed = await post(`${gateway.url}/admin/dead-letters/${deadLetter.id}/replay`, {});
      expect(replayed).toMatchObject({ status: 202, body: { status: 'sending' } });
      await eventually(() => textsTo(fake, alice.id).length > 0);
      expect(textsTo(fake, alice.id)).toEqual(['echo: lost?']);
      expect(asked(backend)).toEqual(['lost?']);
      const again = await post(`${gateway.url}/admin/dead-letters/${deadLetter.id}/replay`, {});
      expect(again.status).toBe(409);
    });
  });
});
