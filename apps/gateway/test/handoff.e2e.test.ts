import { metricValueAt } from '@switchboard/testkit/prometheus';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, eventually, get, serveYaml } from './serve-process.js';

// biome-ignore lint/suspicious/noExplicitAny: Bot API payloads are read freely
type Json = Record<string, any>;

const ADMIN = { authorization: 'Bearer admin-secret' };
const BOB = { authorization: 'Bearer bob-secret' };
const alice = { id: 5_550_001, is_bot: false, first_name: 'Alice' };
const carol = { id: 5_550_002, is_bot: false, first_name: 'Carol' };
const dave = { id: 5_550_003, is_bot: false, first_name: 'Dave' };
const erin = { id: 5_550_004, is_bot: false, first_name: 'Erin' };
const frank = { id: 5_550_005, is_bot: false, first_name: 'Frank' };
const privateChat = (user: { id: number; first_name: string }) => ({
  id: user.id,
  first_name: user.first_name,
  type: 'private',
});
const keyOf = (user: { id: number }) => `telegram:tg:person:${user.id}`;
const sessionUrl = (gateway: ServeProcess, user: { id: number }) =>
  `${gateway.url}/admin/sessions/${encodeURIComponent(keyOf(user))}`;

function say(fake: FakeTelegram, user: typeof alice, text: string): Json {
  return fake.pushUpdate({ message: fake.message({ from: user, chat: privateChat(user), text }) });
}

function sentTexts(fake: FakeTelegram, chatId: number): string[] {
  return fake
    .sentMessages()
    .filter((sent) => sent.body.chat_id === chatId)
    .map((sent) => String(sent.body.text));
}

async function request(method: string, url: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : (JSON.parse(text) as Json) };
}

const requestsOf = (backend: FakePipeline, user: { id: number }) =>
  backend.requests.filter((sent) => sent.session.key === keyOf(user));

describe('human handoff (end to end: Telegram fake, http backend)', () => {
  let fake: FakeTelegram;
  let backend: FakePipeline;
  let gateway: ServeProcess;

  beforeAll(async () => {
    fake = await startFakeTelegram();
    backend = await startFakePipeline();
    // "escalate" makes the bot hand the conversation over itself.
    backend.respond = async (sent) =>
      sent.text === 'escalate'
        ? {
            status: 200,
            body: {
              replies: [{ text: 'passing you to a person' }],
              handoff: { reason: 'asked to escalate' },
            },
          }
        : { status: 200, body: { replies: [{ text: `bot: ${sent.text}` }] } };
    gateway = await serveYaml(`
admin:
  token: admin-secret
  label: alice-ops
  tokens: [{ label: bob, token: bob-secret }]
channels:
  - { id: tg, type: telegram, token: "${fake.token}", mode: polling, api_root: "${fake.url}/" }
pipelines:
  - { id: bot, type: http, url: "${backend.url}" }
routing:
  default: bot
  rules:
    - { name: human, type: message_content, operator: contains, value: "human please", pipeline: __handoff__ }
`);
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await Promise.all([fake?.close(), backend?.close()]);
  });

  it('holds the messages of a session a rule handed over, relays the operator, and resumes the bot with them merged', async () => {
    say(fake, alice, 'human please');
    const begun = await eventually(async () => {
      const view = await get(sessionUrl(gateway, alice), ADMIN);
      return view.body.handoff !== null && view.body;
    });
    expect(begun.handoff).toMatchObject({ by: 'rule:human', channel: 'tg', chat_id: String(alice.id) });

    for (const text of ['one', 'two', 'three']) say(fake, alice, text);
    const held = await eventually(async () => {
      const view = await get(sessionUrl(gateway, alice), ADMIN);
      return view.body.transcript.length === 4 && view.body;
    });
    expect(held.transcript.map((entry: Json) => [entry.from, entry.text])).toEqual([
      ['user', 'human please'],
      ['user', 'one'],
      ['user', 'two'],
      ['user', 'three'],
    ]);
    expect(held.handoff).toMatchObject({ held: 4, unread: 4 });
    expect(requestsOf(backend, alice)).toHaveLength(0);
    const inbox = await get(`${gateway.url}/admin/handoffs`, ADMIN);
    expect(inbox.body.items.map((item: Json) => item.session)).toContain(keyOf(alice));
    const audited = await get(
      `${gateway.url}/admin/audit?outcome=handed_off&session=${encodeURIComponent(keyOf(alice))}`,
      ADMIN,
    );
    expect(audited.body.items.map((item: Json) => [item.reason, item.text]).sort()).toEqual([
      ['held', 'human please'],
      ['held', 'one'],
      ['held', 'three'],
      ['held', 'two'],
    ]);

    // Bob's token: his replies are recorded under his name, and reach the user in order.
    for (const text of ['Hi, Bob here.', 'How can I help?']) {
      const sent = await request('POST', `${sessionUrl(gateway, alice)}/replies`, BOB, { text });
      expect(sent.status).toBe(202);
    }
    await eventually(() => sentTexts(fake, alice.id).length === 2);
    expect(sentTexts(fake, alice.id)).toEqual(['Hi, Bob here.', 'How can I help?']);
    const replies = await eventually(async () => {
      const audit = await get(`${gateway.url}/admin/audit?outcome=handed_off&reason=operator_reply`, ADMIN);
      return audit.body.items.length === 2 && audit.body.items;
    });
    expect(replies.map((item: Json) => item.sender_name)).toEqual(['bob', 'bob']);
    const answered = await get(sessionUrl(gateway, alice), ADMIN);
    expect(answered.body.handoff).toMatchObject({ unread: 0, waiting_since: null });
    // The first reply answered the four waiting messages; the second answered none.
    expect(await metricValueAt(gateway.url, 'switchboard_operator_response_seconds_count')).toBe(1);
    expect(
      await metricValueAt(gateway.url, 'switchboard_sessions_in_handoff{scope="replica"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(requestsOf(backend, alice)).toHaveLength(0);

    const ended = await request('DELETE', `${sessionUrl(gateway, alice)}/handoff`, ADMIN, { resume: 'bot' });
    expect(ended).toMatchObject({ status: 200, body: { resumed: 'bot', held: 4 } });
    const [resumed] = await eventually(
      () => requestsOf(backend, alice).length === 1 && requestsOf(backend, alice),
    );
    expect(resumed?.text).toBe('human please\none\ntwo\nthree');
    expect(resumed?.messages.map((message) => message.id)).toEqual([ended.body?.message_id]);
    const transcript = (resumed as unknown as Json).handoff.transcript as Json[];
    expect(transcript.map((entry) => [entry.from, entry.text])).toEqual([
      ['user', 'human please'],
      ['user', 'one'],
      ['user', 'two'],
      ['user', 'three'],
      ['operator', 'Hi, Bob here.'],
      ['operator', 'How can I help?'],
    ]);
    expect(transcript.filter((entry) => entry.from === 'operator').map((entry) => entry.name)).toEqual([
      'bob',
      'bob',
    ]);
    await eventually(() => sentTexts(fake, alice.id).length === 3);
    expect(sentTexts(fake, alice.id)[2]).toBe('bot: human please\none\ntwo\nthree');

    // Handed back: the next message runs the bot again.
    say(fake, alice, 'thanks');
    await eventually(() => sentTexts(fake, alice.id).includes('bot: thanks'));
    expect((await get(sessionUrl(gateway, alice), ADMIN)).body.handoff).toBeNull();
  });

  it('holds a session the bot handed over itself, until an operator hands it back without resuming', async () => {
    say(fake, carol, 'escalate');
    await eventually(() => sentTexts(fake, carol.id).includes('passing you to a person'));
    const view = await get(sessionUrl(gateway, carol), ADMIN);
    expect(view.body.handoff).toMatchObject({
      by: 'pipeline:bot',
      reason: 'asked to escalate',
      pipeline: 'bot',
    });

    say(fake, carol, 'hello?');
    await eventually(async () => (await get(sessionUrl(gateway, carol), ADMIN)).body.transcript.length === 1);
    const ended = await request('DELETE', `${sessionUrl(gateway, carol)}/handoff`, ADMIN, { resume: 'skip' });
    expect(ended.body).toMatchObject({ resumed: 'skip', held: 1, message_id: null });
    say(fake, carol, 'still there');
    await eventually(() => sentTexts(fake, carol.id).includes('bot: still there'));
    expect(requestsOf(backend, carol).map((sent) => sent.text)).toEqual(['escalate', 'still there']);
  });

  it('resumes on the default pipeline a session whose only message sent it to an operator', async () => {
    say(fake, erin, 'human please, now');
    await eventually(async () => (await get(sessionUrl(gateway, erin), ADMIN)).body.handoff?.held === 1);
    const ended = await request('DELETE', `${sessionUrl(gateway, erin)}/handoff`, ADMIN, { resume: 'bot' });
    expect(ended.body).toMatchObject({ resumed: 'bot', held: 1, message_id: expect.any(String) });
    await eventually(() => sentTexts(fake, erin.id).includes('bot: human please, now'));
    expect(requestsOf(backend, erin).map((sent) => sent.text)).toEqual(['human please, now']);
  });

  it('lets an operator take a session over, and answers what was wrong', async () => {
    const taken = await request('POST', `${sessionUrl(gateway, dave)}/handoff`, BOB, {});
    expect(taken).toMatchObject({ status: 201, body: { created: true, handoff: { by: 'operator:bob' } } });
    const again = await request('POST', `${sessionUrl(gateway, dave)}/handoff`, ADMIN, {});
    expect(again).toMatchObject({ status: 200, body: { created: false } });
    say(fake, dave, 'anyone?');
    await eventually(async () => (await get(sessionUrl(gateway, dave), ADMIN)).body.handoff?.held === 1);
    expect(requestsOf(backend, dave)).toHaveLength(0);

    const bad = await request(
      'POST',
      `${gateway.url}/admin/sessions/${encodeURIComponent('nope')}/replies`,
      ADMIN,
      { text: 'x' },
    );
    expect(bad.status).toBe(400);
    expect(bad.body?.error.message).toContain('params.key');
    const missing = await request('POST', `${sessionUrl(gateway, alice)}/replies`, ADMIN, { text: 'x' });
    expect(missing).toMatchObject({ status: 404, body: { error: { code: 'SB_HANDOFF_NOT_FOUND' } } });
    const empty = await request('POST', `${sessionUrl(gateway, dave)}/replies`, ADMIN, { text: '  ' });
    expect(empty.status).toBe(400);
    expect(empty.body?.error.message).toContain('body.text');
    const stranger = await request(
      'POST',
      `${sessionUrl(gateway, dave)}/handoff`,
      { authorization: 'Bearer nope' },
      {},
    );
    expect(stranger.status).toBe(401);
  });
  it('sends an operator reply with a file (sendPhoto, then its text), keeps it named in the transcript, and refuses a bad one naming the field', async () => {
    const taken = await request('POST', `${sessionUrl(gateway, frank)}/handoff`, ADMIN, {});
    expect(taken.status).toBe(201);
    const png = Buffer.from('\x89PNG operator chart bytes');
    const sent = await request('POST', `${sessionUrl(gateway, frank)}/replies`, ADMIN, {
      text: 'here is the form',
      attachments: [
        { type: 'image', data: png.toString('base64'), name: 'form.png', mime_type: 'image/png' },
      ],
      id: 'with-file-1',
    });
    expect(sent).toMatchObject({ status: 202, body: { id: 'with-file-1' } });
    const calls = await eventually(() => {
      const done = fake.calls.filter(
        (call) => call.body.chat_id === frank.id && call.status === 200 && call.method !== 'sendChatAction',
      );
      return done.length >= 2 && done;
    });
    expect(calls.map((call) => call.method)).toEqual(['sendPhoto', 'sendMessage']);
    const photo = fake.sentMedia().find((media) => media.body.chat_id === frank.id);
    expect(photo?.file?.bytes.equals(png)).toBe(true);
    expect(sentTexts(fake, frank.id)).toEqual(['here is the form']);

    const fileOnly = await request('POST', `${sessionUrl(gateway, frank)}/replies`, ADMIN, {
      attachments: [{ type: 'file', url: 'https://files.example.com/terms.pdf', name: 'terms.pdf' }],
    });
    expect(fileOnly.status).toBe(202);
    const view = await eventually(async () => {
      const session = await get(sessionUrl(gateway, frank), ADMIN);
      return session.body.transcript.length === 2 && session.body;
    });
    expect(view.transcript.map((entry: Json) => [entry.text, entry.attachments])).toEqual([
      ['here is the form', [{ type: 'image', name: 'form.png', mime_type: 'image/png', url: null }]],
      [
        '',
        [{ type: 'file', name: 'terms.pdf', mime_type: null, url: 'https://files.example.com/terms.pdf' }],
      ],
    ]);
    // The transcript names the file; its bytes travel only with the delivery.
    expect(JSON.stringify(view)).not.toContain(png.toString('base64'));

    const neither = await request('POST', `${sessionUrl(gateway, frank)}/replies`, ADMIN, {});
    expect(neither.status).toBe(400);
    expect(neither.body?.error.message).toContain('needs a text or at least one attachment');
    const badData = await request('POST', `${sessionUrl(gateway, frank)}/replies`, ADMIN, {
      attachments: [{ type: 'image', data: 'not base64!' }],
    });
    expect(badData.status).toBe(400);
    expect(badData.body?.error.message).toContain('body.attachments[0].data: must be standard base64');
  });
});

describe('human handoff: idle timeout', () => {
  it('hands the session back by itself once no operator acted for handoff.idle_timeout', async () => {
    const fake = await startFakeTelegram();
    const backend = await startFakePipeline();
    const gateway = await serveYaml(`
handoff: { idle_timeout: 2s }
channels:
  - { id: tg, type: telegram, token: "${fake.token}", mode: polling, api_root: "${fake.url}/" }
pipelines:
  - { id: bot, type: http, url: "${backend.url}" }
routing: { default: bot }
`);
    try {
      const taken = await request(
        'POST',
        `${sessionUrl(gateway, alice)}/handoff`,
        {},
        { reason: 'watching' },
      );
      expect(taken.status).toBe(201);
      say(fake, alice, 'is anybody there');
      await eventually(async () => (await get(sessionUrl(gateway, alice))).body.handoff?.held === 1);
      expect(requestsOf(backend, alice)).toHaveLength(0);
      const [resumed] = await eventually(
        () => requestsOf(backend, alice).length > 0 && requestsOf(backend, alice),
        15_000,
      );
      expect(resumed?.text).toBe('is anybody there');
      expect((await get(sessionUrl(gateway, alice))).body.handoff).toBeNull();
      await eventually(() => sentTexts(fake, alice.id).includes('echo: is anybody there'));
    } finally {
      await gateway.stop('SIGKILL');
      await Promise.all([fake.close(), backend.close()]);
    }
  });
});
