import { type FakeOpenAI, numberedTokens, startFakeOpenAI } from '@switchboard/testkit/openai';
import {
  type FakeTeams,
  type MessageSpec,
  messageActivity,
  startFakeTeams,
} from '@switchboard/testkit/teams';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, eventually, outcomeCount, serveYaml } from './serve-process.js';

const PATH = '/teams/ms/messages';
/** Teams' split limit in the channel (`MAX_TEXT_CHARS`). */
const LIMIT = 7_000;

/** 100 tokens over 2 s: a streamed answer, previewed and edited in place at most once a second. */
const TOKENS = numberedTokens(100);
const ANSWER = TOKENS.join('');

/** Starts `switchboard serve` with one Teams channel `ms` pointed at `fake`; "stream me" goes to `llm`. */
function serveWithTeams(fake: FakeTeams, openai: FakeOpenAI): Promise<ServeProcess> {
  return serveYaml(`
channels:
  - id: ms
    type: teams
    app_id: "${fake.appId}"
    app_password: ${fake.appPassword}
    openid_metadata_url: "${fake.openIdMetadataUrl}"
    token_url: "${fake.tokenUrl}"
    outbound: { retry: { base_delay: 100ms, max_delay: 2s } }
pipelines:
  - { id: echo, type: echo }
  - { id: llm, type: openai, base_url: "${openai.baseUrl}", api_key: sk-test, model: gpt-test, stream: true, history_turns: 0 }
routing:
  default: echo
  rules:
    - { name: streamed, type: message_content, operator: contains, value: "stream me", pipeline: llm }
`);
}

describe('teams channel (end to end)', () => {
  let fake: FakeTeams;
  let openai: FakeOpenAI;
  let gateway: ServeProcess;
  const send = (spec: MessageSpec, options?: Parameters<FakeTeams['post']>[3]) =>
    fake.post(gateway.url, PATH, messageActivity(fake, spec), options);

  beforeAll(async () => {
    fake = await startFakeTeams();
    openai = await startFakeOpenAI({ tokens: TOKENS, spacingMs: 20 });
    gateway = await serveWithTeams(fake, openai);
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await fake?.close();
    await openai?.close();
  });

  describe('when the gateway starts', () => {
    it('fetches a client-credentials token with the app id and password', () => {
      expect(fake.tokensIssued()).toBe(1);
    });
  });

  describe('when an activity comes with a forged, missing or mismatched token', () => {
    it('answers 401 and answers nothing of it', async () => {
      const spec = { conversationType: 'personal', conversationId: 'a:forged', text: 'forged' } as const;
      expect((await send(spec, { signature: 'forged' })).status).toBe(401);
      expect((await send(spec, { signature: 'none' })).status).toBe(401);
      expect((await send(spec, { audience: 'another-app' })).status).toBe(401);
      const stolen = await send(spec, { serviceUrlClaim: 'https://smba.example.invalid/' });
      expect(stolen.status).toBe(401);
      expect(stolen.body).toMatchObject({ error: { code: 'SB_HTTP_UNAUTHORIZED' } });
      await send({ ...spec, text: 'genuine' });
      // One conversation runs in order: a queued forgery would have been answered first.
      await eventually(() => fake.deliveredTo('a:forged').length === 1);
      expect(fake.deliveredTo('a:forged')).toEqual(['genuine']);
    });
  });

  describe('when a person writes to the bot one to one', () => {
    it('replies to the activity in the conversation with the bearer token', async () => {
      const activity = messageActivity(fake, {
        conversationType: 'personal',
        conversationId: 'a:dm',
        text: 'hi',
      });
      expect((await fake.post(gateway.url, PATH, activity)).status).toBe(200);
      await eventually(() => fake.deliveredTo('a:dm').length === 1);
      const [call] = fake.calls.filter((entry) => entry.conversationId === 'a:dm');
      expect(call).toMatchObject({
        method: 'POST',
        activityId: activity.id,
        body: { type: 'message', text: 'hi' },
      });
      expect(call?.token).toMatch(/^fake-teams-access-/);
    });
  });

  describe('when a group chat talks', () => {
    it('answers only the message that mentions the bot, without the mention text', async () => {
      const chat = { conversationType: 'groupChat', conversationId: '19:group@thread.v2' } as const;
      expect((await send({ ...chat, text: 'just chatting' })).status).toBe(200);
      await send({ ...chat, text: 'now you', mentionBot: true });
      await eventually(() => fake.deliveredTo('19:group@thread.v2').length === 1);
      expect(fake.deliveredTo('19:group@thread.v2')).toEqual(['now you']);
    });

    it('replies in the reply chain of a channel post', async () => {
      const thread = '19:general@thread.tacv2;messageid=1718000000001';
      await send({
        conversationType: 'channel',
        conversationId: thread,
        text: 'in the thread',
        mentionBot: true,
      });
      await eventually(() => fake.deliveredTo('19:general@thread.tacv2').length === 1);
      expect(fake.calls.find((call) => call.body.text === 'in the thread')?.conversationId).toBe(thread);
    });
  });

  describe('when the connector delivers the same activity twice', () => {
    it('answers both 200 and runs one turn', async () => {
      const activity = messageActivity(fake, {
        conversationType: 'personal',
        conversationId: 'a:twice',
        text: 'once only',
      });
      const answers = [
        await fake.post(gateway.url, PATH, activity),
        await fake.post(gateway.url, PATH, activity),
      ];
      expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
      await send({ conversationType: 'personal', conversationId: 'a:twice', text: 'next' });
      await eventually(() => fake.deliveredTo('a:twice').length === 2);
      expect(fake.deliveredTo('a:twice')).toEqual(['once only', 'next']);
      expect(await outcomeCount(gateway, 'ms', 'duplicate')).toBe(1);
    });
  });

  describe('when the connector answers a reply 429 with Retry-After', () => {
    it('delivers it later, once', async () => {
      fake.failNext(1, { kind: 'rate_limited', retryAfterSec: 1 });
      const before = fake.calls.length;
      await send({ conversationType: 'personal', conversationId: 'a:limited', text: 'patience' });
      await eventually(() => fake.deliveredTo('a:limited').length === 1);
      const tries = fake.calls.slice(before).filter((call) => call.conversationId === 'a:limited');
      expect(tries).toHaveLength(2);
      expect((tries[1]?.at ?? 0) - (tries[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
      expect(fake.deliveredTo('a:limited')).toEqual(['patience']);
    });
  });

  describe('when a reply is longer than one Teams message', () => {
    it('sends it split at the limit, in order', async () => {
      const text = `${'a'.repeat(LIMIT)}${'b'.repeat(3_000)}`;
      await send({ conversationType: 'personal', conversationId: 'a:long', text });
      await eventually(() => fake.deliveredTo('a:long').length === 2);
      expect(fake.deliveredTo('a:long')).toEqual(['a'.repeat(LIMIT), 'b'.repeat(3_000)]);
    });
  });

  describe('when the answer is streamed', () => {
    it('posts one reply and edits it in place, at least 1 s apart, ending as the whole answer', async () => {
      await send({ conversationType: 'personal', conversationId: 'a:stream', text: 'stream me' });
      await eventually(
        () => fake.edits().some((edit) => edit.conversationId === 'a:stream' && edit.text === ANSWER),
        20_000,
      );
      expect(fake.deliveredTo('a:stream')).toHaveLength(1);
      const edits = fake.edits().filter((edit) => edit.conversationId === 'a:stream');
      for (let i = 1; i < edits.length; i++) {
        expect((edits[i]?.at ?? 0) - (edits[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
      }
      expect(edits.at(-1)?.text).toBe(ANSWER);
      expect(new Set(edits.map((edit) => edit.activityId)).size).toBe(1);
    }, 30_000);
  });

  describe("when a message comes from the bot's own account", () => {
    it('is not answered', async () => {
      const chat = { conversationType: 'personal', conversationId: 'a:self' } as const;
      await send({ ...chat, text: 'echo of myself', from: { id: fake.botId, name: 'Switchboard' } });
      await send({ ...chat, text: 'a person' });
      await eventually(() => fake.deliveredTo('a:self').length === 1);
      expect(fake.deliveredTo('a:self')).toEqual(['a person']);
    });
  });

  describe('when Teams sends activities that are not messages', () => {
    it('acknowledges them and answers nothing', async () => {
      const conversation = { id: 'a:update', conversationType: 'personal' };
      for (const type of ['conversationUpdate', 'typing', 'messageReaction']) {
        const activity = { type, id: `${type}-1`, serviceUrl: fake.serviceUrl, conversation };
        expect((await fake.post(gateway.url, PATH, activity)).status).toBe(200);
      }
      await send({ conversationType: 'personal', conversationId: 'a:update', text: 'a message' });
      await eventually(() => fake.deliveredTo('a:update').length === 1);
      expect(fake.deliveredTo('a:update')).toEqual(['a message']);
    });
  });
});
