import { type FakeDiscord, type FakeDiscordUser, startFakeDiscord } from '@switchboard/testkit/discord';
import { beforeEach, describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, eventually, get, runCli, serveYaml, useCleanups } from './serve-process.js';

// The real `switchboard serve` process talks to a fake Discord (REST + gateway WebSocket) through
// `api_url`, with discord.js doing login, heartbeats, resumes and the REST queue as in production.

const GUILD = '1230000000000000001';
const GENERAL = '1230000000000000100';
const THREAD = '1260000000000000777';
const DM = '1240000000000000009';
const alice: FakeDiscordUser = { id: '234567890123456789', username: 'alice', global_name: 'Alice' };

const cleanup = useCleanups();
let fake: FakeDiscord;

beforeEach(async () => {
  fake = await startFakeDiscord();
  cleanup(() => fake.close());
  fake.guildCreate({
    id: GUILD,
    channels: [{ id: GENERAL, name: 'general' }],
    threads: [{ id: THREAD, parent_id: GENERAL }],
  });
});

const PIPELINES = 'pipelines: [{ id: echo, type: echo }]\nrouting: { default: echo }';

/**
 * Starts `switchboard serve` with one discord channel `dc` pointed at the fake, token from the env.
 * Typing is off: these tests fail and count the REST calls of replies, which a typing call would
 * share (typing.e2e.test.ts tests it).
 */
function serve(yaml = PIPELINES, token = fake.token): Promise<ServeProcess> {
  const channel = `{ id: dc, type: discord, token: "\${DISCORD_BOT_TOKEN}", api_url: "${fake.url}", outbound: { typing: false } }`;
  return serveYaml(`audit: { ignored: true }\nchannels: [${channel}]\n${yaml}\n`, {
    cleanup,
    env: { DISCORD_BOT_TOKEN: token },
  });
}

function dm(content: string) {
  return fake.messageCreate({ channel_id: DM, channel_type: 1, author: alice, content });
}

function inGuild(channelId: string, content: string, options: { mentionBot?: boolean } = {}) {
  const mentionBot = options.mentionBot ?? true;
  return fake.messageCreate({
    channel_id: channelId,
    guild_id: GUILD,
    author: alice,
    content: mentionBot ? `<@${fake.botUser.id}> ${content}` : content,
    mentions: mentionBot ? [fake.botUser] : [],
  });
}

/** Waits until the bot posted `count` messages and returns them. */
function sentMessages(count: number) {
  return eventually(() => fake.sentMessages().length >= count && fake.sentMessages());
}

describe('discord channel (switchboard serve against a fake Discord)', { timeout: 60_000 }, () => {
  describe('when a DM, a channel mention and a thread mention arrive', () => {
    it('answers each as a message reply in its own channel or thread', async () => {
      const gateway = await serve();
      const direct = dm('hello from a DM');
      const group = inGuild(GENERAL, 'hello channel');
      const threaded = inGuild(THREAD, 'hello thread');

      const sent = await sentMessages(3);
      const byChannel = new Map(sent.map((message) => [message.channelId, message.body]));
      expect(byChannel.get(DM)).toEqual({
        content: 'hello from a DM',
        message_reference: { message_id: direct.id, fail_if_not_exists: false },
        allowed_mentions: { parse: ['users'], replied_user: true },
      });
      expect(byChannel.get(GENERAL)).toMatchObject({
        content: '@switchboard hello channel',
        message_reference: { message_id: group.id },
      });
      expect(byChannel.get(THREAD)).toMatchObject({
        content: '@switchboard hello thread',
        message_reference: { message_id: threaded.id },
      });
      expect(fake.requests.every((request) => request.authorization === `Bot ${fake.token}`)).toBe(true);
      expect(JSON.stringify(gateway.logs)).not.toContain(fake.token);
    });
  });

  describe('when a group message does not mention the bot', () => {
    it('is ignored (audited as not_mentioned) and gets no reply', async () => {
      const gateway = await serve();
      const unaddressed = inGuild(GENERAL, 'just chatting', { mentionBot: false });
      inGuild(GENERAL, 'now addressed');

      await sentMessages(1);
      const audit = await eventually(async () => {
        const page = await get(`${gateway.url}/admin/audit?outcome=ignored`);
        return page.body.items?.length > 0 && page.body;
      });
      expect(audit.items[0]).toMatchObject({
        outcome: 'ignored',
        reason: 'not_mentioned',
        platform: 'discord',
        chat_type: 'group',
        chat_id: GENERAL,
        platform_message_id: unaddressed.id,
      });
      expect(fake.sentMessages().map((message) => message.body.content)).toEqual([
        '@switchboard now addressed',
      ]);
    });
  });

  describe('when a rule routes the message to __discard__', () => {
    it('records it in GET /admin/audit with the Discord ids and sends nothing', async () => {
      const gateway = await serve(`${'pipelines: [{ id: echo, type: echo }]'}
routing:
  default: echo
  rules:
    - { name: drop-ads, type: message_content, operator: contains, value: "buy now", pipeline: __discard__ }
`);
      const ad = dm('buy now!!');
      const audit = await eventually(async () => {
        const page = await get(`${gateway.url}/admin/audit?outcome=discarded`);
        return page.body.items?.length > 0 && page.body;
      });
      expect(audit.items[0]).toMatchObject({
        outcome: 'discarded',
        rule: 'drop-ads',
        channel: 'dc',
        platform: 'discord',
        session: `discord:dc:person:${DM}`,
        chat_type: 'person',
        chat_id: DM,
        sender_id: alice.id,
        sender_name: 'Alice',
        platform_message_id: ad.id,
        text: 'buy now!!',
      });
      // A sentinel in the same DM: had the ad been queued, it would have been answered first.
      dm('sentinel');
      const sent = await sentMessages(1);
      expect(sent.map((message) => message.body.content)).toEqual(['sentinel']);
    });
  });

  describe('when a burst arrives with debounce enabled', () => {
    it('answers the three messages with one merged reply', async () => {
      // Runnable by count (max_messages: 3): a long delay, so the gaps between messages do not matter.
      await serve(`pipelines: [{ id: echo, type: echo, aggregation: { enabled: true, delay: 10s, max_messages: 3 } }]
routing: { default: echo }`);
      const first = dm('a');
      dm('b');
      dm('c');

      // The first reply holds all three, so there is nothing left to answer.
      const [reply] = await sentMessages(1);
      expect(reply?.body).toMatchObject({ content: 'a\nb\nc', message_reference: { message_id: first.id } });
    });
  });

  describe('when Discord delivers the same MESSAGE_CREATE twice', () => {
    it('runs one turn', async () => {
      await serve();
      const original = dm('only once');
      fake.messageCreate({ ...original, channel_id: DM, author: alice });

      dm('sentinel');

      // One session runs in order: a second turn for the repeat would come before the sentinel.
      const sent = await sentMessages(2);
      expect(sent.map((message) => message.body.content)).toEqual(['only once', 'sentinel']);
    });
  });

  describe('when unsupported and malformed gateway events arrive', () => {
    it('ignores them without error logs and keeps serving', async () => {
      const gateway = await serve();
      fake.dispatch('TYPING_START', { channel_id: DM, user_id: alice.id, timestamp: 1_700_000_000 });
      fake.dispatch('MESSAGE_REACTION_ADD', {
        user_id: alice.id,
        channel_id: DM,
        message_id: '1',
        emoji: { id: null, name: '👍' },
      });
      fake.dispatch('MESSAGE_UPDATE', { id: '1', channel_id: DM, content: 'edited' });
      fake.messageCreate({ channel_id: GENERAL, guild_id: GUILD, type: 7, author: alice, content: '' });
      fake.sendRaw('{"op": 0, "t": "MESSAGE_CREATE", "s": 1, "d": {"id": "5"}}');
      fake.sendRaw('this is not json');
      fake.dispatch('MESSAGE_CREATE', {
        id: '6',
        type: 0,
        channel_id: DM,
        channel_type: 1,
        content: 'no author',
      });
      dm('still here?');

      const sent = await sentMessages(1);
      expect(sent.map((message) => message.body.content)).toEqual(['still here?']);
      expect((await get(`${gateway.url}/healthz`)).status).toBe(200);
      expect(gateway.child.exitCode).toBeNull();
      expect(gateway.logs.filter((line) => line.level >= 50)).toEqual([]);
      expect(gateway.logs).toContainEqual(
        expect.objectContaining({ msg: 'unsupported message type ignored', type: 7 }),
      );
    });
  });

  describe('when the gateway connection drops', () => {
    it('reports 503 on /readyz until discord.js has resumed the session, then 200', async () => {
      const gateway = await serve();
      expect((await get(`${gateway.url}/readyz`)).status).toBe(200);

      fake.disconnect({ holdReconnect: true });
      const down = await eventually(async () => {
        const readyz = await get(`${gateway.url}/readyz`);
        return readyz.status === 503 && readyz.body;
      });
      expect(down.checks['channel.dc']).toEqual({
        ok: false,
        state: 'active',
        detail: 'shard 0 reconnecting',
      });

      fake.releaseReconnect();
      const up = await eventually(async () => {
        const readyz = await get(`${gateway.url}/readyz`);
        return readyz.status === 200 && readyz.body;
      });
      expect(up.checks['channel.dc']).toMatchObject({ ok: true });
      expect(fake.stats).toMatchObject({ identifies: 1, resumes: 1 });

      dm('after the resume');
      expect((await sentMessages(1))[0]?.body.content).toBe('after the resume');
    });
  });

  describe('when Discord answers 429 to a reply', () => {
    it('waits Retry-After and delivers the reply', async () => {
      const gateway = await serve();
      fake.failNext(1, { status: 429, retryAfterMs: 300 });
      dm('rate limited');

      const [reply] = await sentMessages(1);
      expect(reply?.body.content).toBe('rate limited');
      const posts = fake.requests.filter((request) => request.method === 'POST');
      expect(posts).toHaveLength(2);
      const deadLetters = await get(`${gateway.url}/admin/audit?outcome=dead_lettered`);
      expect(deadLetters.body.items).toEqual([]);
    });
  });

  describe('when Discord answers 500 once', () => {
    it('retries and delivers the reply', async () => {
      await serve();
      fake.failNext(1, { status: 500 });
      dm('server hiccup');

      const [reply] = await sentMessages(1);
      expect(reply?.body.content).toBe('server hiccup');
      expect(fake.requests.filter((request) => request.method === 'POST')).toHaveLength(2);
    });
  });

  describe('when Discord refuses the reply (403)', () => {
    it('dead-letters the turn with the Discord reason and without the token', async () => {
      const gateway = await serve();
      fake.failNext(1, { status: 403 });
      const refused = dm('no permission here');

      const audit = await eventually(async () => {
        const page = await get(`${gateway.url}/admin/audit?outcome=dead_lettered`);
        return page.body.items?.length > 0 && page.body;
      });
      expect(audit.items[0]).toMatchObject({ reason: 'delivery_failed', platform_message_id: refused.id });
      expect(audit.items[0].error).toContain(`POST /channels/${DM}/messages failed (HTTP 403`);
      expect(JSON.stringify(audit)).not.toContain(fake.token);
      expect(JSON.stringify(gateway.logs)).not.toContain(fake.token);
    });
  });

  describe('when a reply is longer than 2000 characters', () => {
    it('posts it as several messages in order, the first one a reply', async () => {
      await serve();
      const long = `${'x'.repeat(1500)} ${'y'.repeat(1500)}`;
      dm(long);

      const sent = await sentMessages(2);
      expect(sent.map((message) => message.body.content)).toEqual(['x'.repeat(1500), 'y'.repeat(1500)]);
      expect(sent.map((message) => 'message_reference' in message.body)).toEqual([true, false]);
    });
  });

  describe('when the queue stays full until the process stops', () => {
    it('records the refused message as dropped/refused in the audit log', async () => {
      // The backend never answers: the first message holds the turn, the second fills the queue
      // (max_pending: 1), the third is refused until the stop.
      const backend = await startFakePipeline();
      cleanup(() => backend.close());
      backend.respond = () => new Promise(() => {});
      const gateway = await serve(`queue: { max_pending: 1 }
shutdown: { drain_timeout: 1s }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }`);
      dm('first');
      dm('second');
      const third = dm('third');
      await eventually(() =>
        gateway.logs.some(
          (line) =>
            line.msg === 'ingress refused the message: retrying' && line.platformMessageId === third.id,
        ),
      );

      expect(await gateway.stop('SIGTERM')).toBe(0);
      const audit = await runCli(['audit', '-c', gateway.configPath, '--outcome', 'dropped', '--json'], {
        cwd: gateway.dir,
        env: { DISCORD_BOT_TOKEN: fake.token },
      });
      expect(audit.stderr).toBe('');
      expect(JSON.parse(audit.stdout).items).toEqual([
        expect.objectContaining({
          outcome: 'dropped',
          reason: 'refused',
          channel: 'dc',
          platform_message_id: third.id,
          text: 'third',
        }),
      ]);
    });
  });

  describe('when the process gets SIGTERM', () => {
    it('closes the gateway connection and exits 0', async () => {
      const gateway = await serve();
      expect(fake.connected()).toBe(true);
      expect(await gateway.stop('SIGTERM')).toBe(0);
      expect(fake.connected()).toBe(false);
      expect(gateway.logs).toContainEqual(expect.objectContaining({ msg: 'channel stopped', channel: 'dc' }));
    });
  });

  describe('when the token is wrong', () => {
    it('refuses to start with SB_CHANNEL_AUTH_FAILED and never prints the token', async () => {
      const error = await serve(PIPELINES, 'wrong-secret-token').then(
        () => null,
        (rejection: Error) => rejection,
      );
      expect(error?.message).toContain(
        'SB_CHANNEL_AUTH_FAILED: channels[dc].token: Discord refused the bot token',
      );
      expect(error?.message).not.toContain('wrong-secret-token');
    });
  });
});
