import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, eventually, get, post, serveYaml } from './serve-process.js';

// The admin routes the console reads, against the real `switchboard serve` over loopback with a
// SQLite file: messages search and path, routing hits and dry run, dead letter purge and
// selections, the overview; and who may call them.

const BEARER = { authorization: 'Bearer s3cret' };
const FROM_PROXY = { 'x-forwarded-for': '203.0.113.9' };

const ROUTING = `routing:
  default: echo
  rules:
    - { name: drop-ads, type: message_content, operator: contains, value: "buy now", pipeline: __discard__ }
    - { name: to-bot, type: message_content, operator: starts_with, value: "bot ", pipeline: bot }
`;

function serve(backend: FakePipeline, admin = '') {
  return serveYaml(
    `pipelines:
  - { id: echo, type: echo }
  - { id: bot, type: http, url: "${backend.url}", max_concurrency: 1 }
${ROUTING}${admin}`,
    { env: { ADMIN_TOKEN: 's3cret' } },
  );
}

async function send(gateway: ServeProcess, text: string, user = 'u1') {
  const answer = await post(`${gateway.url}/v1/messages`, { session_id: `s-${user}`, user_id: user, text });
  return answer.body as { id: string; status: string; rule: string | null };
}

async function request(gateway: ServeProcess, method: string, path: string, body?: unknown) {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await response.text();
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response shapes
  return { status: response.status, body: (text === '' ? null : JSON.parse(text)) as any };
}

describe('the console admin API (end to end)', () => {
  let backend: FakePipeline;
  let gateway: ServeProcess;
  const healthy = { value: false };
  /** While set, the backend holds messages whose text has `hold` until it resolves. */
  const hold: { gate: Promise<void> | null } = { gate: null };

  beforeAll(async () => {
    backend = await startFakePipeline();
    // 400 is fatal: a message routed to `bot` is dead-lettered at its first attempt.
    backend.respond = async (call) => {
      if (hold.gate !== null && call.text.includes('hold')) {
        await hold.gate;
        return { status: 200, body: { replies: [{ text: `held: ${call.text}` }] } };
      }
      return healthy.value
        ? { status: 200, body: { replies: [{ text: `bot: ${call.text}` }] } }
        : { status: 400, body: { error: 'bad' } };
    };
    gateway = await serve(backend);
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await backend?.close();
  });

  describe('GET /admin/messages', () => {
    it('finds a discarded message by a piece of its text in another case, and by its sender', async () => {
      const discarded = await send(gateway, 'Please buy now, Cheap Watches', 'ada');
      expect(discarded.status).toBe('discarded');
      await send(gateway, 'buy now again', 'bob');
      // The audit log commits in groups: the record is there a moment after the answer.
      let byText = await get(`${gateway.url}/admin/messages?text=cheap%20WATCHES&since=1h`);
      await eventually(async () => {
        byText = await get(`${gateway.url}/admin/messages?text=cheap%20WATCHES&since=1h`);
        return byText.body.items?.length > 0;
      });
      expect(byText.status).toBe(200);
      expect(byText.body.items).toMatchObject([
        { message_id: discarded.id, outcome: 'discarded', rule: 'drop-ads', sender_id: 'ada' },
      ]);
      expect(byText.body.next_cursor).toBeNull();
      await eventually(async () => {
        const bySender = await get(`${gateway.url}/admin/messages?sender=bob&rule=drop-ads`);
        return bySender.body.items?.length === 1;
      });
    });

    it('answers 400 naming the field for a text search past 200 characters or without another filter or since, a filter past its length or a bad limit', async () => {
      const long = await get(`${gateway.url}/admin/messages?text=${'a'.repeat(201)}`);
      expect(long.status).toBe(400);
      expect(long.body.error).toMatchObject({ code: 'SB_HTTP_BAD_REQUEST' });
      expect(long.body.error.message).toContain('querystring.text');
      const alone = await get(`${gateway.url}/admin/messages?text=watches`);
      expect(alone.status).toBe(400);
      expect(alone.body.error.message).toContain('querystring.text');
      for (const field of ['reason', 'rule', 'channel', 'session', 'sender', 'cursor']) {
        const tooLong = await get(`${gateway.url}/admin/messages?${field}=${'a'.repeat(513)}`);
        expect(tooLong.status).toBe(400);
        expect(tooLong.body.error.message).toContain(`querystring.${field}`);
      }
      const limit = await get(`${gateway.url}/admin/messages?limit=0`);
      expect(limit.status).toBe(400);
      expect(limit.body.error.message).toContain('querystring.limit');
    });
  });

  describe('GET /admin/messages/{id}', () => {
    it('shows a discarded message received, routed by its rule, and its outcome', async () => {
      const discarded = await send(gateway, 'buy now: the path', 'cy');
      const path = await get(`${gateway.url}/admin/messages/${discarded.id}`);
      expect(path.status).toBe(200);
      expect(path.body).toMatchObject({
        id: discarded.id,
        received: { channel: 'api', sender_id: 'cy', text: 'buy now: the path' },
        routed: { rule: 'drop-ads', by_default: false, pipeline: '__discard__' },
        turns: [],
        outcome: { status: 'discarded', reason: 'rule' },
        sources: { trail: true, status: true },
      });
      expect(typeof path.body.received.at).toBe('number');
      await eventually(
        async () => (await get(`${gateway.url}/admin/messages/${discarded.id}`)).body.sources.audit,
      );
    });

    it('shows a completed message with its session, turn, attempt, replies and the default route', async () => {
      const completed = await send(gateway, 'hello there', 'dee');
      expect(completed.status).toBe('completed');
      const path = await get(`${gateway.url}/admin/messages/${completed.id}`);
      expect(path.body).toMatchObject({
        session: expect.stringMatching(/^openapi:api:person:/),
        routed: { rule: null, by_default: true, pipeline: 'echo' },
        merged_with: [],
        turns: [{ pipeline: 'echo', attempt: 1, result: 'completed', messages: [completed.id] }],
        replies: [{ text: 'hello there' }],
        outcome: { status: 'completed' },
      });
    });

    it('answers 404 SB_HTTP_NOT_FOUND for an id nobody knows', async () => {
      const unknown = await get(`${gateway.url}/admin/messages/01NOPE`);
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('SB_HTTP_NOT_FOUND');
    });
  });

  describe('GET /admin/routing and POST /admin/route', () => {
    it('lists the rules in order with the messages each routed, and the default', async () => {
      const before = (await get(`${gateway.url}/admin/routing`)).body;
      await send(gateway, 'buy now, counted', 'eve');
      await send(gateway, 'plain, counted', 'eve');
      const after = await get(`${gateway.url}/admin/routing`);
      expect(after.status).toBe(200);
      expect(after.body.rules.map((rule: { name: string }) => rule.name)).toEqual(['drop-ads', 'to-bot']);
      expect(after.body.rules[0]).toMatchObject({ pipeline: '__discard__', value: 'buy now' });
      expect(after.body.rules[0].hits).toBe(before.rules[0].hits + 1);
      expect(after.body.default).toEqual({ pipeline: 'echo', hits: before.default.hits + 1 });
    });

    it('dry-runs a message: the rule, the pipeline and why, without routing it', async () => {
      const before = (await get(`${gateway.url}/admin/routing`)).body;
      const run = await post(`${gateway.url}/admin/route`, {
        channel: 'api',
        chat_id: '1',
        text: 'bot ping',
      });
      expect(run.status).toBe(200);
      expect(run.body).toMatchObject({
        rule: 'to-bot',
        pipeline: 'bot',
        routed_by_rule: true,
        result: 'pipeline bot',
        trace: [
          { rule: 'drop-ads', matched: false },
          { rule: 'to-bot', matched: true },
        ],
      });
      expect((await get(`${gateway.url}/admin/routing`)).body).toEqual(before);
    });

    it('answers 400 naming the field: a missing chat_id, an unknown channel, an unknown key', async () => {
      const missing = await post(`${gateway.url}/admin/route`, { channel: 'api', text: 'x' });
      expect(missing.status).toBe(400);
      expect(missing.body?.error.message).toContain('body.chat_id');
      const channel = await post(`${gateway.url}/admin/route`, { channel: 'nope', chat_id: '1', text: 'x' });
      expect(channel.status).toBe(400);
      expect(channel.body?.error.message).toContain('body.channel: no channel "nope" (known: api)');
      const extra = await post(`${gateway.url}/admin/route`, {
        channel: 'api',
        chat_id: '1',
        text: 'x',
        to: 1,
      });
      expect(extra.body?.error.message).toContain('body.to: unknown key');
    });
  });

  describe('dead letters', () => {
    /** Sends `text` to the failing `bot`: its dead letter's audit id, and the message's id. */
    async function deadLetterOf(text: string): Promise<{ id: string; messageId: string }> {
      const answer = await send(gateway, text, 'fay');
      expect(answer.status).toBe('dead_lettered');
      let id: string | undefined;
      await eventually(async () => {
        const listed = await get(`${gateway.url}/admin/dead-letters`);
        id = listed.body.items.find((item: { message_id: string }) => item.message_id === answer.id)?.id;
        return id !== undefined;
      });
      return { id: id as string, messageId: answer.id };
    }

    it('DELETE purges one: 204, then gone from the list, and 404 SB_DEAD_LETTER_NOT_FOUND the second time', async () => {
      const { id } = await deadLetterOf('bot purge me');
      const purged = await request(gateway, 'DELETE', `/admin/dead-letters/${id}`);
      expect(purged.status).toBe(204);
      const listed = await get(`${gateway.url}/admin/dead-letters`);
      expect(listed.body.items.map((item: { id: string }) => item.id)).not.toContain(id);
      const again = await request(gateway, 'DELETE', `/admin/dead-letters/${id}`);
      expect(again.status).toBe(404);
      expect(again.body.error.code).toBe('SB_DEAD_LETTER_NOT_FOUND');
      const replay = await post(`${gateway.url}/admin/dead-letters/${id}/replay`, {});
      expect(replay.status).toBe(404);
    });

    it('replays and purges a selection, answering each id on its own', async () => {
      const { id: first, messageId: replayedMessage } = await deadLetterOf('bot first');
      const { id: second } = await deadLetterOf('bot second');
      healthy.value = true;
      const replayed = await post(`${gateway.url}/admin/dead-letters/replay`, { ids: [first, 'nope'] });
      expect(replayed.status).toBe(200);
      expect(replayed.body?.results).toMatchObject([
        { id: first, ok: true, status: 'queued' },
        { id: 'nope', ok: false, error: { code: 'SB_DEAD_LETTER_NOT_FOUND' } },
      ]);
      const purged = await post(`${gateway.url}/admin/dead-letters/purge`, { ids: [second, first] });
      expect(purged.body?.results).toMatchObject([
        { id: second, ok: true, status: 'purged' },
        // A replayed dead letter may be purged too: its replay was queued already.
        { id: first, ok: true, status: 'purged' },
      ]);
      const tooMany = await post(`${gateway.url}/admin/dead-letters/purge`, {
        ids: Array.from({ length: 101 }, (_, index) => `id${index}`),
      });
      expect(tooMany.status).toBe(400);
      expect(tooMany.body?.error.message).toContain('body.ids');
      const none = await post(`${gateway.url}/admin/dead-letters/replay`, { ids: [] });
      expect(none.status).toBe(400);
      expect(none.body?.error.message).toContain('body.ids');
      // The purge did not stop the replay queued before it: the message ends completed.
      await eventually(async () => {
        const path = await get(`${gateway.url}/admin/messages/${replayedMessage}`);
        return path.body.outcome?.status === 'completed';
      });
    });
  });

  describe('GET /admin/overview', () => {
    it('counts this minute’s outcomes by kind and shows load, limits, latency and channels', async () => {
      // Accepted is not ended: a turn counts once its reply has left the outbox, so both reads
      // wait for an idle gateway (an earlier test's replay may still be ending when this starts).
      // Idle: nothing pending or running, the outbox empty, and the minute's counts the same on
      // both sides of the outbox read (an outcome is counted once its settlement commits).
      const idle = async () => {
        const overview = await get(`${gateway.url}/admin/overview`);
        const { pending, inflight_turns } = overview.body.load;
        if (pending !== 0 || inflight_turns !== 0) return false;
        const metrics = await get(`${gateway.url}/metrics`);
        expect(metrics.status).toBe(200);
        if (/^switchboard_outbox_pending\{[^}]*\} [1-9]/m.test(String(metrics.body))) return false;
        const again = await get(`${gateway.url}/admin/overview`);
        const same =
          JSON.stringify(again.body.messages_per_minute.at(-1)) ===
            JSON.stringify(overview.body.messages_per_minute.at(-1)) &&
          again.body.load.pending === 0 &&
          again.body.load.inflight_turns === 0;
        return same && again;
      };
      const before = (await eventually(idle, 10_000, 'an idle gateway')).body;
      const countsBefore = before.messages_per_minute.at(-1).counts;
      // Three answered, two discarded by drop-ads; every earlier test waited for its messages' ends.
      for (let index = 0; index < 3; index++) await send(gateway, `overview ${index}`, 'gus');
      for (let index = 0; index < 2; index++) await send(gateway, `buy now, overview ${index}`, 'gus');
      const overview = await eventually(
        async () => {
          const idleNow = await idle();
          const minute = idleNow ? idleNow.body.messages_per_minute.at(-1) : undefined;
          const turned = minute && minute.at > before.messages_per_minute.at(-1).at;
          const counted =
            minute &&
            minute.counts.completed >= countsBefore.completed + 3 &&
            minute.counts.discarded >= countsBefore.discarded + 2;
          return minute && (counted || turned) && idleNow;
        },
        10_000,
        'the five messages counted',
      );
      expect(overview.status).toBe(200);
      const minutes = overview.body.messages_per_minute;
      expect(minutes).toHaveLength(60);
      // The minute may have turned between the two reads.
      if (minutes.at(-1).at === before.messages_per_minute.at(-1).at) {
        expect(minutes.at(-1).counts.discarded).toBe(countsBefore.discarded + 2);
        expect(minutes.at(-1).counts.completed).toBe(countsBefore.completed + 3);
      }
      expect(overview.body.last_hour.completed).toBeGreaterThanOrEqual(3);
      expect(overview.body.last_hour.discarded).toBeGreaterThanOrEqual(2);
      expect(overview.body.load).toMatchObject({
        inflight_turns: 0,
        pending: 0,
        limits: { concurrency_pipeline: 20, concurrency_session: 1, max_pending: 10_000 },
      });
      expect(overview.body.pipelines.echo.p50_ms).toEqual(expect.any(Number));
      expect(overview.body.pipelines.echo.p95_ms).toBeGreaterThanOrEqual(overview.body.pipelines.echo.p50_ms);
      expect(overview.body.channels).toEqual([{ id: 'api', ready: true }]);
    });
  });

  describe('GET /admin/sessions', () => {
    it('lists a running turn with its session, age and what waits behind it, and the ready session waiting for the slot', async () => {
      let release = () => {};
      hold.gate = new Promise((resolve) => {
        release = resolve;
      });
      const sessions = async () => (await get(`${gateway.url}/admin/sessions`)).body;
      // Not awaited: the backend holds the turn.
      const first = send(gateway, 'bot hold first', 'hal');
      await eventually(async () => (await sessions()).running?.length === 1);
      // Behind hal's own turn, and ivy's waiting for `bot`'s one slot (max_concurrency: 1).
      const behind = send(gateway, 'bot hold second', 'hal');
      const other = send(gateway, 'bot hold other', 'ivy');
      let view = await sessions();
      await eventually(async () => {
        view = await sessions();
        return view.running[0]?.pending === 1 && view.waiting.length === 1;
      });
      expect(view.running).toEqual([
        {
          turn_id: expect.any(String),
          session: expect.stringContaining('s-hal'),
          pipeline: 'bot',
          messages: 1,
          age_ms: expect.any(Number),
          replica: null,
          pending: 1,
        },
      ]);
      expect(view.waiting).toEqual([
        {
          session: expect.stringContaining('s-ivy'),
          pipeline: 'bot',
          pending: 1,
          oldest_wait_ms: expect.any(Number),
        },
      ]);
      // The overview shows the same queue: two waiting on `bot`.
      const overview = (await get(`${gateway.url}/admin/overview`)).body;
      expect(overview.pipelines.bot).toMatchObject({
        inflight: 1,
        pending: 2,
        oldest_wait_ms: expect.any(Number),
      });
      // Ages grow while the turn is held.
      const age = view.running[0].age_ms;
      await eventually(async () => (await sessions()).running[0]?.age_ms > age);
      release();
      hold.gate = null;
      await Promise.all([first, behind, other]);
      await eventually(async () => {
        const after = await sessions();
        return after.running.length === 0 && after.waiting.length === 0;
      });
    });

    it('answers 400 naming the field for a limit out of 1..200', async () => {
      for (const limit of ['0', '201', 'many']) {
        const bad = await get(`${gateway.url}/admin/sessions?limit=${limit}`);
        expect(bad.status).toBe(400);
        expect(bad.body.error.message).toContain('querystring.limit');
      }
      expect((await get(`${gateway.url}/admin/sessions?limit=200`)).status).toBe(200);
    });

    it('is in the OpenAPI document with its limit', async () => {
      const openapi = (await get(`${gateway.url}/openapi.json`)).body;
      const route = openapi.paths['/admin/sessions']?.get;
      expect(route?.tags).toEqual(['admin']);
      expect(route?.parameters).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            in: 'query',
            name: 'limit',
            schema: expect.objectContaining({ maximum: 200 }),
          }),
        ]),
      );
    });
  });

  describe('when no admin.token is set', () => {
    it('refuses a client a proxy forwarded with 403 on every console route', async () => {
      for (const path of [
        '/admin/messages',
        '/admin/messages/x',
        '/admin/routing',
        '/admin/overview',
        '/admin/sessions',
      ]) {
        const refused = await get(`${gateway.url}${path}`, FROM_PROXY);
        expect({ path, status: refused.status }).toEqual({ path, status: 403 });
      }
      expect((await post(`${gateway.url}/admin/route`, {}, FROM_PROXY)).status).toBe(403);
      const purge = await fetch(`${gateway.url}/admin/dead-letters/x`, {
        method: 'DELETE',
        headers: FROM_PROXY,
      });
      expect(purge.status).toBe(403);
    });
  });

  describe('when an admin.token is set', () => {
    it('answers 401 to a wrong token, before validating, and serves the right one', async () => {
      const guarded = await serve(backend, 'admin: { token: "${ADMIN_TOKEN}" }\n');
      try {
        const wrong = { authorization: 'Bearer nope' };
        for (const path of ['/admin/messages?limit=0', '/admin/routing', '/admin/overview']) {
          const refused = await get(`${guarded.url}${path}`, wrong);
          expect({ path, status: refused.status }).toEqual({ path, status: 401 });
          expect(refused.body.error.code).toBe('SB_HTTP_UNAUTHORIZED');
        }
        expect((await post(`${guarded.url}/admin/route`, {}, wrong)).status).toBe(401);
        expect((await get(`${guarded.url}/admin/routing`, BEARER)).status).toBe(200);
      } finally {
        await guarded.stop('SIGKILL');
      }
    });
  });
});
