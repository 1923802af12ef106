import {
  type FakeSlack,
  eventEnvelope,
  messageEvent,
  nextSlackTs,
  sendEvent,
  startFakeSlack,
} from '@switchboard/testkit/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, eventually, get, outcomeCount, serveYaml } from './serve-process.js';

const SECRET = 'slack-signing-secret';
const signed = { signingSecret: SECRET };

/** Starts `switchboard serve` with one Slack channel `sl` pointed at `fake`. */
function serveWithSlack(
  fake: FakeSlack,
  options: { botToken?: string; extra?: string; secondChannel?: boolean } = {},
): Promise<ServeProcess> {
  return serveYaml(`
audit: { ignored: true }
channels:
  - { id: sl, type: slack, bot_token: ${options.botToken ?? 'xoxb-test'}, signing_secret: ${SECRET}, api_url: "${fake.apiUrl}"${options.extra ?? ''} }${options.secondChannel ? `\n  - { id: sl2, type: slack, bot_token: xoxb-test, signing_secret: ${SECRET}, api_url: "${fake.apiUrl}", bot_user_id: UBOT }` : ''}
pipelines:
  - { id: echo, type: echo }
  # Runnable by count: a long delay, so that the gaps between the burst's messages do not matter.
  - { id: burst, type: echo, aggregation: { enabled: true, delay: 10s, max_messages: 3 } }
routing:
  default: echo
  rules:
    - { name: drop-ads, type: message_content, operator: contains, value: "buy now", pipeline: __discard__ }
    - { name: burst-chat, type: launcher_id, operator: eq, value: D0BURST, pipeline: burst }
`);
}

/** The texts posted to one Slack channel so far. */
function postedTo(fake: FakeSlack, channel: string) {
  return fake.callsTo('chat.postMessage').filter((call) => call.body.channel === channel);
}

function waitForPosts(fake: FakeSlack, channel: string, count: number) {
  return eventually(() => {
    const posts = postedTo(fake, channel);
    return posts.length >= count ? posts : undefined;
  });
}

describe('slack channel (end to end)', () => {
  let fake: FakeSlack;
  let gateway: ServeProcess;

  beforeAll(async () => {
    fake = await startFakeSlack();
    // `sl2` serves the one test that counts outcomes, so that no other test's turn is counted.
    gateway = await serveWithSlack(fake, { secondChannel: true });
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await fake?.close();
  });

  describe('when the gateway starts without bot_user_id', () => {
    it('learns the bot user id with auth.test and reports the channel ready', async () => {
      expect(fake.callsTo('auth.test')).toHaveLength(1);
      expect(fake.callsTo('auth.test')[0]?.token).toBe('xoxb-test');
      const ready = await get(`${gateway.url}/readyz`);
      expect(ready.status).toBe(200);
    });
  });

  describe('when Slack verifies the request URL', () => {
    it('answers the challenge', async () => {
      const answer = await sendEvent(
        gateway.url,
        'sl',
        { token: 'legacy', challenge: 'abc-123', type: 'url_verification' },
        signed,
      );
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ challenge: 'abc-123' });
    });
  });

  describe('when a person writes a direct message', () => {
    it('replies in the same direct message, with the bot token', async () => {
      const answer = await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'D0DM', text: 'hello bot' })),
        signed,
      );
      expect(answer.status).toBe(200);
      const [reply] = await waitForPosts(fake, 'D0DM', 1);
      expect(reply?.token).toBe('xoxb-test');
      expect(reply?.body).toMatchObject({ channel: 'D0DM', text: 'hello bot' });
      expect(reply?.body.thread_ts).toBeUndefined();
    });
  });

  describe('when a group message mentions the bot, at the top level and in a thread', () => {
    it('replies in the channel, and in the thread for the threaded one', async () => {
      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'C0GROUP', text: '<@UBOT> top level' })),
        signed,
      );
      await waitForPosts(fake, 'C0GROUP', 1);
      const thread = '1718000000.000001';
      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'C0GROUP', text: '<@UBOT> in thread', thread_ts: thread })),
        signed,
      );
      const posts = await waitForPosts(fake, 'C0GROUP', 2);
      expect(posts.map((post) => post.body)).toEqual([
        expect.objectContaining({ text: '@switchboard top level' }),
        expect.objectContaining({ text: '@switchboard in thread', thread_ts: thread }),
      ]);
      expect(posts[0]?.body.thread_ts).toBeUndefined();
    });
  });

  describe('when a group message does not mention the bot', () => {
    it('is ignored: audited as not_mentioned and never answered', async () => {
      const event = messageEvent({ channel: 'C0QUIET', text: 'just chatting' });
      expect((await sendEvent(gateway.url, 'sl', eventEnvelope(event), signed)).status).toBe(200);
      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'C0QUIET', text: '<@UBOT> now you' })),
        signed,
      );
      const posts = await waitForPosts(fake, 'C0QUIET', 1);
      expect(posts.map((post) => post.body.text)).toEqual(['@switchboard now you']);
      const audit = await get(`${gateway.url}/admin/audit?outcome=ignored&channel=sl`);
      expect(audit.body.items).toContainEqual(
        expect.objectContaining({
          reason: 'not_mentioned',
          chat_id: 'C0QUIET',
          platform_message_id: `C0QUIET:${event.ts}`,
        }),
      );
    });
  });

  describe('when a rule routes the message to __discard__', () => {
    it('audits it with the Slack ids and does not answer', async () => {
      const event = messageEvent({ channel: 'D0ADS', text: 'buy now, cheap!' });
      expect((await sendEvent(gateway.url, 'sl', eventEnvelope(event), signed)).status).toBe(200);
      const audit = await eventually(async () => {
        const answer = await get(`${gateway.url}/admin/audit?outcome=discarded&rule=drop-ads`);
        return answer.body.items?.length > 0 ? answer : undefined;
      });
      expect(audit.body.items[0]).toMatchObject({
        outcome: 'discarded',
        rule: 'drop-ads',
        channel: 'sl',
        platform: 'slack',
        chat_type: 'person',
        chat_id: 'D0ADS',
        sender_id: 'U0001',
        platform_message_id: `D0ADS:${event.ts}`,
        text: 'buy now, cheap!',
      });
      expect(postedTo(fake, 'D0ADS')).toEqual([]);
    });
  });

  describe('when the signature is bad or the timestamp stale', () => {
    it('answers 401 and queues nothing', async () => {
      const bad = await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'D0SIG', text: 'forged' })),
        {
          ...signed,
          badSignature: true,
        },
      );
      expect(bad.status).toBe(401);
      expect(bad.body).toMatchObject({ error: { code: 'SB_HTTP_UNAUTHORIZED' } });
      const stale = await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'D0SIG', text: 'replayed' })),
        {
          ...signed,
          staleTimestamp: true,
        },
      );
      expect(stale.status).toBe(401);
      // A genuine message in the same session afterwards: had the others been queued, they would be answered first.
      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'D0SIG', text: 'genuine' })),
        signed,
      );
      // One session runs in order: a queued forgery would have been answered before it.
      const [first] = await waitForPosts(fake, 'D0SIG', 1);
      expect(first?.body.text).toBe('genuine');
    });
  });

  describe('when Slack delivers the same event three times', () => {
    it('answers each with 200 and runs one turn', async () => {
      const body = eventEnvelope(messageEvent({ channel: 'D0RETRY', text: 'once only' }));
      const answers = [
        await sendEvent(gateway.url, 'sl', body, signed),
        await sendEvent(gateway.url, 'sl', body, { ...signed, retryNum: 1 }),
        await sendEvent(gateway.url, 'sl', body, { ...signed, retryNum: 2 }),
      ];
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'D0RETRY', text: 'next' })),
        signed,
      );
      await waitForPosts(fake, 'D0RETRY', 2);
      expect(postedTo(fake, 'D0RETRY').map((post) => post.body.text)).toEqual(['once only', 'next']);
      // The two redeliveries; duplicates are recorded before the answer, and no earlier test sent any.
      expect(await outcomeCount(gateway, 'sl', 'duplicate')).toBe(2);
    });
  });

  describe('when a mention arrives both as a message and as an app_mention event', () => {
    it('answers once', async () => {
      const ts = nextSlackTs();
      const text = '<@UBOT> twin';
      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'C0TWIN', text, ts })),
        signed,
      );
      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope({
          type: 'app_mention',
          user: 'U0001',
          text,
          ts,
          channel: 'C0TWIN',
          event_ts: ts,
          team: 'T0001',
        }),
        signed,
      );
      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'C0TWIN', text: '<@UBOT> after' })),
        signed,
      );
      await waitForPosts(fake, 'C0TWIN', 2);
      expect(postedTo(fake, 'C0TWIN').map((post) => post.body.text)).toEqual([
        '@switchboard twin',
        '@switchboard after',
      ]);
    });
  });

  describe('when a burst arrives in a chat whose pipeline debounces', () => {
    it('answers once with the merged text', async () => {
      for (const text of ['a', 'b', 'c']) {
        await sendEvent(gateway.url, 'sl', eventEnvelope(messageEvent({ channel: 'D0BURST', text })), signed);
      }
      // The first answer holds all three (max_messages: 3), so there is nothing left to answer.
      const [first] = await waitForPosts(fake, 'D0BURST', 1);
      expect(first?.body.text).toBe('a\nb\nc');
    });
  });

  describe('when Slack sends events the gateway does not handle', () => {
    it('acknowledges them without errors and answers nothing', async () => {
      const ts = nextSlackTs();
      const unsupported = [
        {
          type: 'message',
          subtype: 'message_changed',
          channel: 'C0OTHER',
          ts,
          hidden: true,
          message: { type: 'message', user: 'U0001', text: '<@UBOT> edited', ts },
        },
        {
          type: 'message',
          subtype: 'channel_join',
          user: 'U0003',
          text: '<@U0003> has joined the channel',
          channel: 'C0OTHER',
          ts: nextSlackTs(),
        },
        {
          type: 'reaction_added',
          user: 'U0001',
          reaction: 'tada',
          item: { type: 'message', channel: 'C0OTHER', ts },
          event_ts: nextSlackTs(),
        },
      ];
      for (const event of unsupported) {
        expect((await sendEvent(gateway.url, 'sl', eventEnvelope(event), signed)).status).toBe(200);
      }
      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'C0OTHER', text: '<@UBOT> sentinel' })),
        signed,
      );
      await waitForPosts(fake, 'C0OTHER', 1);
      expect(postedTo(fake, 'C0OTHER').map((post) => post.body.text)).toEqual(['@switchboard sentinel']);
      expect(gateway.logs.filter((line) => line.level >= 50)).toEqual([]);
    });
  });

  describe('when bodies are malformed', () => {
    it('answers 400 to what is no event, acknowledges an unreadable event with a warning, and keeps serving', async () => {
      const broken = await sendEvent(gateway.url, 'sl', '{"type": "event_callback", ', signed);
      expect(broken.status).toBe(400);
      expect(broken.body).toMatchObject({
        error: { code: 'SB_HTTP_BAD_REQUEST', message: 'body: malformed JSON' },
      });
      // Slack would redeliver a non-2xx answer, and the redelivery would be just as unreadable.
      const noEvent = await sendEvent(gateway.url, 'sl', { type: 'event_callback', event_id: 'Ev1' }, signed);
      expect(noEvent.status).toBe(200);
      const noChannel = await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope({ type: 'message', user: 'U0001', text: 'hi', ts: nextSlackTs() }),
        signed,
      );
      expect(noChannel.status).toBe(200);
      // The gateway's log lines arrive through its stdout, after the answers.
      const problems = () =>
        gateway.logs
          .filter((line) => line.msg === 'malformed slack event acknowledged')
          .map((line) => line.problem);
      await eventually(() => problems().length === 2);
      expect(problems()).toEqual(['event: expected an object', 'event.channel: expected a non-empty string']);

      await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'D0ALIVE', text: 'still there?' })),
        signed,
      );
      expect((await waitForPosts(fake, 'D0ALIVE', 1))[0]?.body.text).toBe('still there?');
    });
  });

  describe('when chat.postMessage is rate-limited', () => {
    it('waits out Retry-After and delivers the reply', async () => {
      fake.failNext(2, { kind: 'rate_limited', retryAfterSec: 1 });
      const before = fake.callsTo('chat.postMessage').length;
      await sendEvent(
        gateway.url,
        'sl2',
        eventEnvelope(messageEvent({ channel: 'D0LIMIT', text: 'patience' })),
        signed,
      );
      const posts = await waitForPosts(fake, 'D0LIMIT', 3);
      expect(posts.map((post) => post.body.text)).toEqual(['patience', 'patience', 'patience']);
      expect(fake.callsTo('chat.postMessage').length - before).toBe(3);
      // The turn completed: `sl2` carries this one message only.
      await eventually(async () => (await outcomeCount(gateway, 'sl2', 'completed')) === 1);
      const audit = await get(`${gateway.url}/admin/audit?channel=sl2`);
      expect(audit.body.items).toEqual([]);
    });
  });
  describe('when chat.postMessage fails for good', () => {
    it('dead-letters the turn with SB_CHANNEL_SEND_FAILED and the Slack error, without the token', async () => {
      fake.failNext(1, { kind: 'platform_error', error: 'channel_not_found' });
      const event = messageEvent({ channel: 'D0GONE', text: 'anyone?' });
      await sendEvent(gateway.url, 'sl', eventEnvelope(event), signed);
      const audit = await eventually(async () => {
        const answer = await get(`${gateway.url}/admin/audit?outcome=dead_lettered`);
        return answer.body.items?.length > 0 ? answer : undefined;
      });
      expect(audit.body.items[0]).toMatchObject({
        reason: 'delivery_failed',
        chat_id: 'D0GONE',
        platform_message_id: `D0GONE:${event.ts}`,
      });
      expect(audit.body.items[0].error).toMatch(
        /^SB_CHANNEL_SEND_FAILED: .*chat\.postMessage failed \(channel_not_found\)/,
      );
      expect(JSON.stringify(gateway.logs)).not.toContain('xoxb-test');
    });
  });
});

describe('slack channel in Socket Mode (end to end)', () => {
  let fake: FakeSlack;
  let gateway: ServeProcess;

  beforeAll(async () => {
    fake = await startFakeSlack();
    gateway = await serveWithSlack(fake, { extra: ', app_token: xapp-test, bot_user_id: UBOT' });
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await fake?.close();
  });

  describe('when app_token is set', () => {
    it('connects over Socket Mode instead of mounting the Events API route, skipping auth.test', async () => {
      expect(fake.callsTo('apps.connections.open').map((call) => call.token)).toEqual(['xapp-test']);
      expect(fake.socketConnections()).toBe(1);
      expect(fake.callsTo('auth.test')).toEqual([]);
      const answer = await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'D0HTTP', text: 'hi' })),
        signed,
      );
      expect(answer.status).toBe(404);
    });

    it('acknowledges pushed events and replies in the chat', async () => {
      await fake.pushSocketEvent(
        eventEnvelope(messageEvent({ channel: 'D0SOCKET', text: 'over the socket' })),
      );
      const [reply] = await waitForPosts(fake, 'D0SOCKET', 1);
      expect(reply?.body).toMatchObject({ channel: 'D0SOCKET', text: 'over the socket' });
    });
  });
});

describe('slack channel with a wrong bot token (end to end)', () => {
  it('refuses to start, naming SB_CHANNEL_AUTH_FAILED without printing the token', async () => {
    const fake = await startFakeSlack();
    try {
      const failure = await serveWithSlack(fake, { botToken: 'xoxb-wrong-secret' }).then(
        () => 'started',
        (error: Error) => error.message,
      );
      expect(failure).toContain('SB_CHANNEL_AUTH_FAILED');
      expect(failure).toContain('invalid_auth');
      expect(failure).not.toContain('xoxb-wrong-secret');
    } finally {
      await fake.close();
    }
  });
});
