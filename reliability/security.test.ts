import { readFileSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, runCli, tempDir, writeConfig } from '../apps/gateway/test/serve-process.js';
import { eventEnvelope, messageEvent, signSlackRequest } from '../packages/testkit/src/slack.js';
import { errorOf } from './support/error-answer.js';
import { type EveryChannelGateway, startEveryChannelGateway } from './support/every-channel-gateway.js';
import { type Figures, recordFigures } from './support/figures.js';
import { type RawAnswer, type RawRequest, exchange } from './support/raw-http.js';

// Attacks on one real `switchboard serve` (docs/RELIABILITY.md): secrets never reach a log line
// or an admin answer, even when the failures that log errors echo them back; forged and stale
// Slack signatures, wrong Telegram secret tokens and wrong API or admin keys get 401 and nothing
// is enqueued.

/**
 * Recognisable secrets, each searched for in full and by its first `PREFIX_CHARS`; no secret's
 * prefix occurs in another secret, so a find names the secret that leaked.
 */
const SECRETS = {
  apiKey: 'APIKEY-SECRET-0123456789',
  adminToken: 'ADMINTOKEN-SECRET-0123456789',
  telegramToken: '987654321:TGTOKEN-SECRET-0123456789',
  telegramSecretToken: 'TGHOOK-SECRET-0123456789',
  slackBotToken: 'xoxb-SLACKBOT-SECRET-0123456789',
  slackSigningSecret: 'SLACKSIGN-SECRET-0123456789',
};
const PIPELINE_SECRETS = {
  SB_PIPELINE_SECRET: 'PIPEHMAC-SECRET-0123456789',
  SB_PIPELINE_API_KEY: 'PIPEKEY-SECRET-0123456789',
  SB_OPENAI_API_KEY: 'sk-OPENAI-SECRET-0123456789',
};
const ALL_SECRETS: Record<string, string> = { ...SECRETS, ...PIPELINE_SECRETS };
/** Past the 8 characters the brief asks for, short of any whole secret. */
const PREFIX_CHARS = 12;
/** Characters shown on each side of a leak. */
const CONTEXT_CHARS = 160;

const AUTH: [string, string] = ['authorization', `Bearer ${SECRETS.apiKey}`];
const ADMIN: [string, string] = ['authorization', `Bearer ${SECRETS.adminToken}`];
const JSON_TYPE: [string, string] = ['content-type', 'application/json'];

const figures = {
  secrets: Object.keys(ALL_SECRETS).length,
  failures_driven: 0,
  lines_scanned: 0,
  answers_scanned: 0,
  leaks: 0,
  forged_requests: 0,
  forged_accepted: 0,
  forged_not_401: 0,
} satisfies Figures;

/**
 * A bot backend that fails the way real ones do, echoing the credentials it was sent: the
 * `http` pipeline's endpoint answers 500 with its request headers, the OpenAI-compatible one 401
 * "Incorrect API key provided: <key>", as api.openai.com does.
 */
async function startLeakyBackend(): Promise<{ url: string; calls: () => number; close(): Promise<void> }> {
  let calls = 0;
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    request.on('end', () => {
      calls += 1;
      response.writeHead(request.url?.endsWith('/chat/completions') ? 401 : 500, {
        'content-type': 'application/json',
      });
      const key = String(request.headers.authorization ?? '').replace(/^Bearer /, '');
      response.end(
        request.url?.endsWith('/chat/completions')
          ? JSON.stringify({
              error: {
                message: `Incorrect API key provided: ${key}`,
                type: 'invalid_request_error',
                code: 'invalid_api_key',
              },
            })
          : JSON.stringify({ error: `upstream refused ${key}`, headers: request.headers }),
      );
    });
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, calls: () => calls, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Each secret found in `text`, in full or by its prefix, with the text around it. */
function leaksIn(text: string): string[] {
  return Object.entries(ALL_SECRETS).flatMap(([name, value]) => {
    const full = text.indexOf(value);
    const at = full >= 0 ? full : text.indexOf(value.slice(0, PREFIX_CHARS));
    if (at < 0) return [];
    const context = text.slice(Math.max(0, at - CONTEXT_CHARS), at + value.length + CONTEXT_CHARS);
    return [`${name} (${full >= 0 ? 'full' : 'prefix'}): …${context}…`];
  });
}

let under: EveryChannelGateway;
let backend: Awaited<ReturnType<typeof startLeakyBackend>>;
/** Every answer the gateway gave in this scenario, scanned for secrets at the end. */
const answers: Array<{ what: string; body: string }> = [];

async function send(what: string, request: RawRequest): Promise<RawAnswer> {
  const answer = await exchange(under.gateway.url, request);
  answers.push({ what, body: answer.body });
  return answer;
}

function postMessage(
  text: string,
  session: string,
  authorization: [string, string] | null = AUTH,
): RawRequest {
  return {
    method: 'POST',
    target: '/v1/messages',
    headers: [...(authorization === null ? [] : [authorization]), JSON_TYPE],
    body: JSON.stringify({ session_id: session, user_id: 'mallory', text }),
  };
}

/** The sum of `switchboard_messages_total` for one channel: its messages with an outcome. */
async function outcomesOf(channel: string): Promise<number> {
  const { body } = await exchange(under.gateway.url, { method: 'GET', target: '/metrics' });
  return body
    .split('\n')
    .filter((line) => line.startsWith('switchboard_messages_total{') && line.includes(`channel="${channel}"`))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}

/** A well-formed private Telegram text update from chat `chatId`. */
let nextUpdateId = 1;
function telegramUpdate(chatId: number, text: string): string {
  const updateId = nextUpdateId++;
  return JSON.stringify({
    update_id: updateId,
    message: {
      message_id: updateId,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: 'private', first_name: 'Mallory' },
      from: { id: chatId, is_bot: false, first_name: 'Mallory' },
      text,
    },
  });
}

function slackRequest(
  body: string,
  signature: { secret?: string; ageSec?: number; headers?: boolean } = {},
): RawRequest {
  const timestampSec = Math.floor(Date.now() / 1000) - (signature.ageSec ?? 0);
  const headers: Array<[string, string]> = [JSON_TYPE];
  if (signature.headers !== false) {
    headers.push(
      ['x-slack-request-timestamp', String(timestampSec)],
      [
        'x-slack-signature',
        signSlackRequest(signature.secret ?? SECRETS.slackSigningSecret, body, timestampSec),
      ],
    );
  }
  return { method: 'POST', target: '/slack/sl/events', headers, body };
}

/**
 * Counts a forged request and what came of it; returns how the answer falls short of a 401 in
 * the error shape, or null. Each test checks all its requests and then expects no shortfall.
 */
function refusalProblem(what: string, answer: RawAnswer): string | null {
  figures.forged_requests += 1;
  if (answer.status < 300) figures.forged_accepted += 1;
  if (answer.status !== 401) figures.forged_not_401 += 1;
  const error = errorOf(answer);
  if (answer.status === 401 && typeof error !== 'string' && error.code === 'SB_HTTP_UNAUTHORIZED')
    return null;
  return `${what}: ${answer.status} ${answer.body.slice(0, 300)}`;
}

describe('security', () => {
  beforeAll(async () => {
    backend = await startLeakyBackend();
    under = await startEveryChannelGateway({
      secrets: SECRETS,
      extraEnv: PIPELINE_SECRETS,
      pipelinesYaml: `pipelines:
  - { id: echo, type: echo }
  - id: bot
    type: http
    url: "${backend.url}/answer"
    secret: "\${SB_PIPELINE_SECRET}"
    headers: { authorization: "Bearer \${SB_PIPELINE_API_KEY}" }
    retry: { max_attempts: 2, base_delay: 100ms, max_delay: 200ms }
  - id: assistant
    type: openai
    base_url: "${backend.url}/v1"
    api_key: "\${SB_OPENAI_API_KEY}"
    model: gpt-test
    retry: { max_attempts: 2, base_delay: 100ms, max_delay: 200ms }
routing:
  default: echo
  rules:
    - { name: to-bot, type: message_content, operator: contains, value: "fail-http", pipeline: bot }
    - { name: to-assistant, type: message_content, operator: contains, value: "fail-openai", pipeline: assistant }
`,
    });
  });
  afterAll(async () => {
    recordFigures('security', figures);
    await under?.close();
    await backend?.close();
  });

  describe('when requests carry forged or missing credentials', () => {
    it('answers wrong and missing API keys 401 and enqueues nothing', async () => {
      const before = await outcomesOf('api');
      const wrong: Array<[string, string] | null> = [
        null,
        ['authorization', 'Bearer wrong-key'],
        ['authorization', `Bearer ${SECRETS.apiKey}x`],
        ['authorization', `Bearer ${SECRETS.apiKey.slice(0, -1)}`],
        ['authorization', `Basic ${SECRETS.apiKey}`],
        ['authorization', SECRETS.apiKey],
        ['authorization', 'Bearer '],
        ['authorization', `Bearer ${SECRETS.adminToken}`],
      ];
      const problems: Array<string | null> = [];
      for (const authorization of wrong) {
        const answer = await send('wrong api key', postMessage('forged message', 'sec-api', authorization));
        problems.push(refusalProblem(`POST /v1/messages with ${JSON.stringify(authorization)}`, answer));
      }
      expect(problems.filter((problem) => problem !== null)).toEqual([]);
      // The session runs in order: once the next genuine message is final, any forged one accepted
      // before it would have an outcome too.
      const sentinel = await send('sentinel', postMessage('genuine message', 'sec-api'));
      expect(sentinel.status).toBe(200);
      expect(await eventually(async () => (await outcomesOf('api')) >= before + 1 && outcomesOf('api'))).toBe(
        before + 1,
      );
    });

    it('answers wrong admin tokens 401 on every admin route', async () => {
      const wrong: Array<[string, string] | null> = [
        null,
        ['authorization', 'Bearer wrong-token'],
        ['authorization', `Bearer ${SECRETS.apiKey}`],
        ['authorization', `Bearer ${SECRETS.adminToken.slice(0, -1)}`],
      ];
      const routes: Array<[string, string]> = [
        ['GET', '/admin/audit'],
        ['GET', '/admin/audit?limit=abc'],
        ['GET', '/admin/queues'],
        ['GET', '/admin/dead-letters'],
        ['POST', '/admin/dead-letters/01ABC/replay'],
        ['POST', '/admin/reload'],
      ];
      const problems: Array<string | null> = [];
      for (const authorization of wrong) {
        for (const [method, target] of routes) {
          const answer = await send('wrong admin token', {
            method,
            target,
            headers: authorization === null ? [] : [authorization],
          });
          problems.push(refusalProblem(`${method} ${target} with ${JSON.stringify(authorization)}`, answer));
        }
      }
      expect(problems.filter((problem) => problem !== null)).toEqual([]);
    });

    it('answers wrong Telegram secret tokens 401 and enqueues nothing', async () => {
      const chatId = 5_550_001;
      const before = await outcomesOf('tg');
      const wrong = [
        null,
        '',
        'wrong',
        `${SECRETS.telegramSecretToken}x`,
        SECRETS.telegramSecretToken.slice(0, -1),
        SECRETS.telegramSecretToken.toLowerCase(),
        SECRETS.telegramToken,
      ];
      const problems: Array<string | null> = [];
      for (const token of wrong) {
        const answer = await send('wrong telegram secret token', {
          method: 'POST',
          target: '/telegram/tg',
          headers: [
            JSON_TYPE,
            ...(token === null
              ? []
              : ([['x-telegram-bot-api-secret-token', token]] as Array<[string, string]>)),
          ],
          body: telegramUpdate(chatId, 'forged update'),
        });
        problems.push(refusalProblem(`telegram webhook with secret ${JSON.stringify(token)}`, answer));
      }
      expect(problems.filter((problem) => problem !== null)).toEqual([]);
      const sentinel = await send('sentinel', {
        method: 'POST',
        target: '/telegram/tg',
        headers: [JSON_TYPE, ['x-telegram-bot-api-secret-token', SECRETS.telegramSecretToken]],
        body: telegramUpdate(chatId, 'genuine update'),
      });
      expect(sentinel.status).toBe(200);
      const sent = await eventually(() => {
        const texts = under.telegram.sentMessages().filter((message) => message.body.chat_id === chatId);
        return texts.length > 0 && texts.map((message) => message.body.text);
      });
      expect(sent).toEqual(['genuine update']);
      expect(await eventually(async () => (await outcomesOf('tg')) >= before + 1 && outcomesOf('tg'))).toBe(
        before + 1,
      );
    });

    it('answers forged and stale Slack signatures 401 and enqueues nothing', async () => {
      const channel = 'D0SECURITY';
      const before = await outcomesOf('sl');
      const forged = () => JSON.stringify(eventEnvelope(messageEvent({ channel, text: 'forged event' })));
      const attempts: Array<[string, RawRequest]> = [
        ['no signature headers', slackRequest(forged(), { headers: false })],
        [
          'signed with another secret',
          slackRequest(forged(), { secret: `${SECRETS.slackSigningSecret}-wrong` }),
        ],
        ['signed ten minutes ago', slackRequest(forged(), { ageSec: 600 })],
        ['signed ten minutes ahead', slackRequest(forged(), { ageSec: -600 })],
        ['signed with the bot token', slackRequest(forged(), { secret: SECRETS.slackBotToken })],
      ];
      const body = forged();
      const otherBody = slackRequest(forged());
      attempts.push(['signature of another body', { ...slackRequest(body), headers: otherBody.headers }]);
      const valid = slackRequest(forged());
      attempts.push([
        'v1 signature scheme',
        {
          ...valid,
          headers: (valid.headers ?? []).map(([name, value]) =>
            name === 'x-slack-signature' ? [name, String(value).replace(/^v0=/, 'v1=')] : [name, value],
          ),
        },
      ]);
      const problems: Array<string | null> = [];
      for (const [what, request] of attempts)
        problems.push(refusalProblem(`slack event ${what}`, await send(what, request)));
      expect(problems.filter((problem) => problem !== null)).toEqual([]);

      const sentinel = await send(
        'sentinel',
        slackRequest(JSON.stringify(eventEnvelope(messageEvent({ channel, text: 'genuine event' })))),
      );
      expect(sentinel.status).toBe(200);
      const posted = await eventually(() => {
        const texts = under.slack.callsTo('chat.postMessage').filter((call) => call.body.channel === channel);
        return texts.length > 0 && texts.map((call) => call.body.text);
      });
      expect(posted).toEqual(['genuine event']);
      expect(await eventually(async () => (await outcomesOf('sl')) >= before + 1 && outcomesOf('sl'))).toBe(
        before + 1,
      );
    });
  });

  describe('when failures that log errors echo the secrets back', () => {
    it('dead-letters the messages whose pipeline or platform failed', async () => {
      // The http pipeline's endpoint answers 500 with the credentials it was sent.
      const http = await send('http pipeline failure', postMessage('please fail-http', 'sec-http'));
      expect(JSON.parse(http.body)).toMatchObject({ status: 'dead_lettered' });
      // The OpenAI-compatible endpoint answers 401 "Incorrect API key provided: <key>".
      const openai = await send('openai pipeline failure', postMessage('please fail-openai', 'sec-openai'));
      expect(JSON.parse(openai.body)).toMatchObject({ status: 'dead_lettered' });
      // Two attempts of the http pipeline and the one of the OpenAI pipeline reached the backend.
      expect(backend.calls()).toBe(3);
      figures.failures_driven += 2;

      // Telegram and Slack refuse the replies, naming the token in their error.
      under.telegram.failNext('sendMessage', 1, {
        status: 401,
        description: `Unauthorized: invalid token ${SECRETS.telegramToken}`,
      });
      const chatId = 5_550_002;
      await send('telegram send failure', {
        method: 'POST',
        target: '/telegram/tg',
        headers: [JSON_TYPE, ['x-telegram-bot-api-secret-token', SECRETS.telegramSecretToken]],
        body: telegramUpdate(chatId, 'reply fails'),
      });
      under.slack.failNext(1, { kind: 'platform_error', error: `invalid_auth:${SECRETS.slackBotToken}` });
      await send(
        'slack send failure',
        slackRequest(JSON.stringify(eventEnvelope(messageEvent({ channel: 'D0FAIL', text: 'reply fails' })))),
      );
      await eventually(() =>
        under.telegram.callsOf('sendMessage').some((call) => call.body.chat_id === chatId),
      );
      await eventually(() =>
        under.slack.callsTo('chat.postMessage').some((call) => call.body.channel === 'D0FAIL'),
      );
      figures.failures_driven += 2;

      // A reload of a file with secrets in the wrong place: refused, the old config stays.
      const good = readFileSync(under.gateway.configPath, 'utf8');
      writeFileSync(
        under.gateway.configPath,
        good
          .replace('api_keys: ["${SB_API_KEY}"]', 'api_keys: "${SB_API_KEY}"')
          .replace(
            'headers: { authorization: "Bearer ${SB_PIPELINE_API_KEY}" }',
            'headers: "${SB_PIPELINE_API_KEY}"',
          ),
      );
      const reload = await send('reload of a bad file', {
        method: 'POST',
        target: '/admin/reload',
        headers: [ADMIN],
      });
      writeFileSync(under.gateway.configPath, good);
      expect(reload.status).toBeGreaterThanOrEqual(400);
      expect(reload.status).toBeLessThan(500);
      figures.failures_driven += 1;

      // The outcomes of the failures are recorded before the admin answers are read below.
      await eventually(async () => {
        const answer = await send('dead letters', {
          method: 'GET',
          target: '/admin/dead-letters',
          headers: [ADMIN],
        });
        return answer.status === 200 && JSON.parse(answer.body).items.length >= 2;
      });
    });

    it('shows no secret in the audit log, the dead letters or any answer', async () => {
      await send('audit', { method: 'GET', target: '/admin/audit?limit=1000', headers: [ADMIN] });
      await send('dead letters', {
        method: 'GET',
        target: '/admin/dead-letters?limit=1000',
        headers: [ADMIN],
      });
      figures.answers_scanned = answers.length;
      const leaks = answers.flatMap(({ what, body }) => leaksIn(body).map((leak) => `${what}: ${leak}`));
      figures.leaks += leaks.length;
      expect(leaks).toEqual([]);
    });

    it('writes no secret to any log line', async () => {
      const lines = [...under.gateway.logs.map((line) => JSON.stringify(line)), ...under.gateway.stderr];
      figures.lines_scanned += lines.length;
      const leaks = lines.flatMap((line) => leaksIn(line));
      figures.leaks += leaks.length;
      expect(leaks).toEqual([]);
    });

    it('`switchboard config check` names a bad secret field without printing its value', async () => {
      const dir = tempDir();
      const config = readFileSync(under.gateway.configPath, 'utf8')
        .replace('api_keys: ["${SB_API_KEY}"]', 'api_keys: "${SB_API_KEY}"')
        .replace('admin: { token: "${SB_ADMIN_TOKEN}" }', 'admin: { token: ["${SB_ADMIN_TOKEN}"] }')
        .replace(
          'headers: { authorization: "Bearer ${SB_PIPELINE_API_KEY}" }',
          'headers: "${SB_PIPELINE_API_KEY}"',
        )
        .replace('api_key: "${SB_OPENAI_API_KEY}"', 'api_key: { key: "${SB_OPENAI_API_KEY}" }');
      const path = writeConfig(dir, config);
      const { code, stdout, stderr } = await runCli(['config', 'check', '-c', path], {
        cwd: dir,
        env: under.env,
      });
      figures.lines_scanned += `${stdout}${stderr}`.split('\n').length;
      figures.failures_driven += 1;
      expect(code).toBe(1);
      for (const field of [
        'admin.token',
        'channels[0].api_keys',
        'pipelines[1].headers',
        'pipelines[2].api_key',
      ]) {
        expect(stderr).toContain(field);
      }
      const leaks = leaksIn(`${stdout}${stderr}`);
      figures.leaks += leaks.length;
      expect({ leaks, stderr }).toEqual({ leaks: [], stderr: expect.any(String) });
    });
  });
});
