import { OUTCOME_KINDS } from '@switchboard/core';
import { readFileSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, runCli, tempDir, writeConfig } from '../apps/gateway/test/serve-process.js';
import { parseConfig } from '../packages/config/src/index.js';
import { eventEnvelope, messageEvent, signSlackRequest } from '../packages/testkit/src/slack.js';
import { type ErrorAnswer, describeExchange, errorOf, names } from './support/error-answer.js';
import { type EveryChannelGateway, startEveryChannelGateway } from './support/every-channel-gateway.js';
import { type Figures, profile, recordFigures } from './support/figures.js';
import { check, seed } from './support/fuzz-run.js';
import { ALIAS_BOMB, oneWrongValue, yamlText } from './support/generated-configs.js';
import {
  anyUnits,
  codeUnit,
  longText,
  notAString,
  queryString,
  wellFormed,
} from './support/generated-text.js';
import { percentEncode } from './support/percent-encode.js';
import { type RawAnswer, type RawRequest, exchange } from './support/raw-http.js';

// Generated bad input against every route of one real `switchboard serve` (docs/RELIABILITY.md):
// whatever arrives, the answer is below 500, a 4xx is `{error: {code, message}}` naming the bad
// field, and the process neither dies nor logs an unhandled rejection. Random YAML configs, last,
// get `SB_CONFIG_*` errors with one `path: problem` line per problem, never a crash.

const SECRETS = {
  apiKey: 'fuzz-api-key-0123456789',
  adminToken: 'fuzz-admin-token-0123456789',
  telegramToken: '123456789:fuzz-telegram-token',
  telegramSecretToken: 'fuzz-telegram-secret-token',
  slackBotToken: 'xoxb-fuzz-bot-token',
  slackSigningSecret: 'fuzz-slack-signing-secret',
};
const AUTH: [string, string] = ['authorization', `Bearer ${SECRETS.apiKey}`];
const ADMIN: [string, string] = ['authorization', `Bearer ${SECRETS.adminToken}`];
const JSON_TYPE: [string, string] = ['content-type', 'application/json'];
/** The most one paced reply to one chat may take (`outbound.rate` per chat: 1 per second). */
const PACED_SEND_MS = 1_100;
const TELEGRAM_SECRET: [string, string] = ['x-telegram-bot-api-secret-token', SECRETS.telegramSecretToken];
/** zod limits of the openapi channel (packages/channel-openapi/src/api-schemas.ts). */
const MAX_ID_CHARS = 256;
const MAX_TEXT_CHARS = 32_768;
/** The channel's default `max_wait_timeout` (2 min). */
const MAX_WAIT_TIMEOUT_MS = 120_000;
/** Longest an answer may take; a HEAD or a bad request left hanging is a failure. */
const ANSWER_TIMEOUT_MS = 5_000;

const figures = {
  seed,
  inputs: 0,
  answers_5xx: 0,
  no_answer: 0,
  answers_4xx: 0,
  bad_error_shape: 0,
  api_accepted: 0,
  api_final: 0,
  telegram_accepted: 0,
  telegram_answered: 0,
  slack_accepted: 0,
  slack_answered: 0,
  error_log_lines: 0,
  crashes: 0,
  configs_tried: 0,
  configs_crashed: 0,
  cli_config_checks: 0,
} satisfies Figures;

let under: EveryChannelGateway;
/** Ids of the messages the openapi channel accepted; each must end with a final status. */
const acceptedIds: string[] = [];

/**
 * Sends one request and checks what every answer promises: an answer in time, below 500, and a
 * 4xx in the one error shape. Resolves the answer and, for a 4xx, its error.
 */
async function send(request: RawRequest | Buffer): Promise<{ answer: RawAnswer; error?: ErrorAnswer }> {
  figures.inputs += 1;
  const answer = await exchange(under.gateway.url, request, ANSWER_TIMEOUT_MS);
  const fail = (problem: string) => {
    throw new Error(`${problem}\n${describeExchange(request, answer)}`);
  };
  if (answer.timedOut || answer.status === 0) {
    figures.no_answer += 1;
    fail('no answer');
  }
  if (answer.status >= 500) {
    figures.answers_5xx += 1;
    fail(`answered ${answer.status}`);
  }
  if (answer.status < 400) return { answer };
  figures.answers_4xx += 1;
  // An answer to HEAD has no body: its status is all it can say.
  if (!Buffer.isBuffer(request) && request.method === 'HEAD') return { answer };
  const error = errorOf(answer);
  if (typeof error === 'string') {
    figures.bad_error_shape += 1;
    fail(`a ${answer.status} not in the error shape: ${error}`);
  }
  return { answer, error: error as ErrorAnswer };
}

/** Fails with the exchange unless the answer is `status` and its error names `field`. */
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * An id over the length limit, in the one error shape: 400 naming the parameter while the path is
 * short enough for the router to match; else 414 (the router's limit on a path parameter) or 431
 * (a request line past Node's header limit). An id with an unpaired surrogate is also a URL that
 * is not UTF-8: a 400 for the URL is as right as one for the length.
 */
function expectOverLong(
  request: RawRequest,
  result: { answer: RawAnswer; error?: ErrorAnswer },
  field: string,
  id: string,
): void {
  const { status } = result.answer;
  if ((status === 414 || status === 431) && result.error !== undefined) return;
  if (status === 400 && result.error !== undefined && UNPAIRED_SURROGATE.test(id)) return;
  expectNamed(request, result, 400, field);
}

function expectNamed(
  request: RawRequest,
  result: { answer: RawAnswer; error?: ErrorAnswer },
  status: number,
  field: string,
): void {
  const { answer, error } = result;
  if (answer.status !== status || error === undefined || !names(error, field)) {
    throw new Error(`expected ${status} naming "${field}"\n${describeExchange(request, answer)}`);
  }
}

function expectStatus(request: RawRequest | Buffer, answer: RawAnswer, statuses: number[]): void {
  if (!statuses.includes(answer.status)) {
    throw new Error(`expected ${statuses.join(' or ')}\n${describeExchange(request, answer)}`);
  }
}

// ---- generators ---------------------------------------------------------------------------

const POST_FIELDS = [
  'session_id',
  'user_id',
  'text',
  'user_name',
  'chat_type',
  'wait',
  'timeout_ms',
] as const;

const validPost = fc.record(
  {
    session_id: fc.oneof(fc.constantFrom('s1', 's2', 's3'), wellFormed(1, 40)),
    user_id: wellFormed(1, 40),
    text: wellFormed(1, 200),
    user_name: wellFormed(1, 40),
    chat_type: fc.constantFrom('person', 'group'),
    wait: fc.boolean(),
    timeout_ms: fc.integer({ min: 1, max: 2_000 }),
  },
  { requiredKeys: ['session_id', 'user_id', 'text'] },
);

/** A value that makes each field invalid. */
const BAD_VALUES: Record<(typeof POST_FIELDS)[number], fc.Arbitrary<unknown>> = {
  session_id: fc.oneof(notAString, fc.constant(''), longText(MAX_ID_CHARS + 1, 2_000)),
  user_id: fc.oneof(notAString, fc.constant(''), longText(MAX_ID_CHARS + 1, 2_000)),
  user_name: fc.oneof(notAString, fc.constant(''), longText(MAX_ID_CHARS + 1, 2_000)),
  text: fc.oneof(notAString, fc.constant(''), longText(MAX_TEXT_CHARS + 1, MAX_TEXT_CHARS + 100)),
  chat_type: fc.oneof(
    notAString,
    anyUnits(12).filter((value) => value !== 'person' && value !== 'group'),
  ),
  wait: fc.oneof(fc.integer(), fc.string({ maxLength: 5 }), fc.constant(null), fc.constant([true])),
  timeout_ms: fc.oneof(
    fc.integer({ max: 0 }),
    fc.integer({ min: MAX_WAIT_TIMEOUT_MS + 1 }),
    fc.double({ min: 1, max: 1_000, noInteger: true }),
    fc.string({ maxLength: 5 }),
    fc.boolean(),
    fc.constant(null),
  ),
};

/** JSON text of `body` with one more member, written as text so that `__proto__` stays a key. */
function withMember(body: object, key: string, value: unknown): string {
  const json = JSON.stringify(body);
  return `${json.slice(0, -1)},${JSON.stringify(key)}:${JSON.stringify(value) ?? 'null'}}`;
}

function post(body: string, headers: Array<[string, string]> = [AUTH, JSON_TYPE], target = '/v1/messages') {
  return { method: 'POST', target, headers, body } satisfies RawRequest;
}

const HTTP_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'] as const;

// ---- the scenario -------------------------------------------------------------------------

beforeAll(() => {
  process.stdout.write(`fuzz: seed ${seed} (RELIABILITY_SEED to replay), profile ${profile}\n`);
});
// One record for the whole file, once the config describe below has counted its inputs too.
afterAll(() => recordFigures('fuzz', figures));

describe('generated bad input (fuzz)', () => {
  beforeAll(async () => {
    under = await startEveryChannelGateway({
      secrets: SECRETS,
      pipelinesYaml: 'pipelines:\n  - { id: echo, type: echo }\nrouting: { default: echo }\n',
    });
  });
  afterAll(async () => {
    await under?.close();
  });

  describe('when the openapi channel gets generated message bodies', () => {
    it('accepts every well-formed body (200 or 202 with an id)', async () => {
      await check(
        fc.asyncProperty(validPost, async (body) => {
          const request = post(JSON.stringify(body));
          const { answer } = await send(request);
          expectStatus(request, answer, [200, 202]);
          acceptedIds.push(JSON.parse(answer.body).id);
          figures.api_accepted += 1;
        }),
        150,
      );
    });

    it('answers 400 naming the field when exactly one field is wrong', async () => {
      const oneWrong = fc
        .constantFrom(...POST_FIELDS)
        .chain((field) => fc.tuple(fc.constant(field), validPost, BAD_VALUES[field]));
      await check(
        fc.asyncProperty(oneWrong, async ([field, body, value]) => {
          const request = post(JSON.stringify({ ...body, [field]: value }));
          expectNamed(request, await send(request), 400, `body.${field}`);
        }),
        200,
      );
    });

    it('answers 400 naming an unknown key', async () => {
      const unknownKey = fc
        .oneof(
          fc.string({ minLength: 1, maxLength: 20 }),
          fc.constantFrom('__proto__', 'constructor', 'toString'),
        )
        .filter((key) => !(POST_FIELDS as readonly string[]).includes(key));
      await check(
        fc.asyncProperty(validPost, unknownKey, fc.jsonValue({ maxDepth: 2 }), async (body, key, value) => {
          const request = post(withMember(body, key, value));
          expectNamed(request, await send(request), 400, `body.${key}`);
        }),
        100,
      );
    });

    it('never fails on ids and texts of any code units, lone surrogates included', async () => {
      const anyIds = fc.record(
        {
          session_id: anyUnits(40).filter((id) => id.length > 0),
          user_id: anyUnits(40).filter((id) => id.length > 0),
          text: anyUnits(80).filter((text) => text.length > 0),
          user_name: anyUnits(40).filter((name) => name.length > 0),
          wait: fc.constant(false),
        },
        { requiredKeys: ['session_id', 'user_id', 'text', 'wait'] },
      );
      await check(
        fc.asyncProperty(anyIds, async (body) => {
          const request = post(JSON.stringify(body));
          const { answer } = await send(request);
          if (answer.status < 300) {
            acceptedIds.push(JSON.parse(answer.body).id);
            figures.api_accepted += 1;
          }
        }),
        200,
      );
    });

    it('answers 4xx to any JSON value, any bytes and any content type', async () => {
      const body = fc.oneof(
        fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? ''),
        anyUnits(60),
        fc.uint8Array({ maxLength: 60 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
        fc.constantFrom(
          '{',
          '{"session_id":',
          '[]',
          'null',
          '""',
          '{"a":1}{"b":2}',
          '\ufeff{}',
          '{"text":"\\ud800"}',
        ),
      );
      const contentType = fc.constantFrom(
        'application/json',
        'application/json; charset=utf-8',
        'application/json; charset=latin1',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/octet-stream',
        '',
        'application/json, text/plain',
      );
      await check(
        fc.asyncProperty(body, contentType, async (text, type) => {
          const request = post(text, [AUTH, ['content-type', type]]);
          const { answer } = await send(request);
          if (answer.status < 300) {
            acceptedIds.push(JSON.parse(answer.body).id);
            figures.api_accepted += 1;
          }
        }),
        200,
      );
    });

    it('answers 400 naming a bad Idempotency-Key and ignores unknown headers and query strings', async () => {
      const headerName = fc.stringMatching(/^x-[a-z0-9-]{1,20}$/);
      const headerValue = fc.string({
        unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
        maxLength: 40,
      });
      // Header values cannot carry control characters, and the server trims the spaces around them.
      const printable = codeUnit.filter((unit) => unit.charCodeAt(0) >= 0x20 && unit !== '\u007f');
      const idempotencyKey = fc.option(
        fc
          .oneof(fc.string({ unit: printable, maxLength: 30 }), longText(MAX_ID_CHARS + 1, 1_000))
          .map((key) => key.trim()),
      );
      await check(
        fc.asyncProperty(
          validPost,
          fc.array(fc.tuple(headerName, headerValue), { maxLength: 4 }),
          idempotencyKey,
          queryString(fc.oneof(fc.constantFrom('wait', 'session_id', 'timeout_ms'), anyUnits(8))),
          async (body, extra, key, query) => {
            const headers: Array<[string, string]> = [AUTH, JSON_TYPE, ...extra];
            if (key !== null) headers.push(['idempotency-key', key]);
            const request = post(JSON.stringify({ ...body, wait: false }), headers, `/v1/messages?${query}`);
            const result = await send(request);
            // The server reads header bytes as latin1: each UTF-8 byte is one character of the key.
            if (key !== null && (key === '' || Buffer.byteLength(key) > MAX_ID_CHARS)) {
              expectNamed(request, result, 400, 'headers.idempotency-key');
            } else if (result.answer.status < 300) {
              acceptedIds.push(JSON.parse(result.answer.body).id);
              figures.api_accepted += 1;
            }
          },
        ),
        150,
      );
    });
  });

  describe('when the openapi channel gets generated path parameters', () => {
    const pathParam = fc.oneof(
      { weight: 4, arbitrary: anyUnits(40) },
      { weight: 1, arbitrary: longText(MAX_ID_CHARS - 10, 3_000) },
      { weight: 1, arbitrary: fc.constantFrom('.', '..', '%', '%00', '%ZZ', '\u0000', 'a/b', '?', '#') },
    );

    it('answers GET /v1/messages/{id} with 404, or 400 naming an over-long id', async () => {
      await check(
        fc.asyncProperty(pathParam, async (id) => {
          const request = { method: 'GET', target: `/v1/messages/${percentEncode(id)}`, headers: [AUTH] };
          const result = await send(request);
          if (id.length > MAX_ID_CHARS) expectOverLong(request, result, 'params.id', id);
        }),
        150,
      );
    });

    it('answers GET and HEAD /v1/sessions/{session_id}/events, 400 naming an over-long session_id', async () => {
      await check(
        fc.asyncProperty(fc.constantFrom('GET', 'HEAD'), pathParam, async (method, sessionId) => {
          const request = {
            method,
            target: `/v1/sessions/${percentEncode(sessionId)}/events`,
            headers: [AUTH],
          };
          const result = await send(request);
          if (sessionId.length > MAX_ID_CHARS && method === 'GET')
            expectOverLong(request, result, 'params.session_id', sessionId);
        }),
        150,
      );
    });
  });

  describe('when the admin API gets generated queries and ids', () => {
    const validAudit = fc.record(
      {
        outcome: fc.constantFrom(...OUTCOME_KINDS),
        reason: wellFormed(1, 20),
        rule: wellFormed(1, 20),
        channel: fc.constantFrom('api', 'tg', 'sl'),
        session: wellFormed(1, 20),
        since: fc.constantFrom('1h', '30m', '2026-01-01T00:00:00Z'),
        limit: fc.integer({ min: 1, max: 1_000 }).map(String),
      },
      { requiredKeys: [] },
    );
    const badAudit: Record<string, fc.Arbitrary<string>> = {
      outcome: anyUnits(12).filter((value) => !(OUTCOME_KINDS as readonly string[]).includes(value)),
      limit: fc
        .oneof(fc.constantFrom('0', '1001', '1.5', '-1', 'abc', '1e9', ''), anyUnits(6))
        .filter((value) => {
          const limit = Number(value);
          return !(Number.isInteger(limit) && limit >= 1 && limit <= 1_000);
        }),
      since: fc.constantFrom('yesterday', '1 hour', '2026-13-45', '--', 'NaN'),
      until: fc.constantFrom('tomorrow', '1 day', 'x1h'),
      cursor: fc.constant(''),
    };
    const toQuery = (entries: Array<[string, string]>) =>
      entries.map(([key, value]) => `${percentEncode(key)}=${percentEncode(value)}`).join('&');

    it('answers GET /admin/audit 400 naming the one bad filter', async () => {
      const oneBad = fc
        .constantFrom(...Object.keys(badAudit), 'unknown-filter')
        .chain((key) =>
          fc.tuple(
            fc.constant(key),
            validAudit,
            key === 'unknown-filter' ? anyUnits(10) : (badAudit[key] as fc.Arbitrary<string>),
          ),
        );
      await check(
        fc.asyncProperty(oneBad, async ([key, filters, value]) => {
          const entries = Object.entries(filters).filter(([name]) => name !== key);
          const request = {
            method: 'GET',
            target: `/admin/audit?${toQuery([...entries, [key, value]])}`,
            headers: [ADMIN],
          };
          expectNamed(request, await send(request), 400, `querystring.${key}`);
        }),
        150,
      );
    });

    it('answers any admin query with a status below 500, and 401 without the token', async () => {
      const route = fc.constantFrom('/admin/audit', '/admin/dead-letters', '/admin/queues');
      const keys = fc.oneof(
        fc.constantFrom('limit', 'outcome', 'since', 'until', 'cursor', 'channel'),
        anyUnits(8),
      );
      const authorization = fc.oneof(
        fc.constant<[string, string] | null>(ADMIN),
        fc.constant<[string, string] | null>(null),
        fc.constantFrom<[string, string]>(
          ['authorization', 'Bearer wrong'],
          ['authorization', `Basic ${SECRETS.adminToken}`],
          ['authorization', `Bearer ${SECRETS.apiKey}`],
          ['authorization', 'Bearer '],
        ),
      );
      await check(
        fc.asyncProperty(route, queryString(keys), authorization, async (path, query, auth) => {
          const request = { method: 'GET', target: `${path}?${query}`, headers: auth === null ? [] : [auth] };
          const { answer } = await send(request);
          if (auth !== ADMIN) expectStatus(request, answer, [401]);
        }),
        150,
      );
    });

    it('answers POST /admin/dead-letters/{id}/replay for unknown ids with 4xx', async () => {
      await check(
        fc.asyncProperty(anyUnits(40), async (id) => {
          const request = {
            method: 'POST',
            target: `/admin/dead-letters/${percentEncode(id)}/replay`,
            headers: [ADMIN],
          };
          const { answer } = await send(request);
          expectStatus(request, answer, [400, 404]);
        }),
        100,
      );
    });

    it('answers POST /admin/reload of a generated bad file with 4xx and keeps the old config', async () => {
      const good = readFileSync(under.gateway.configPath, 'utf8');
      // Generated YAML is sometimes a valid configuration (an empty file is the quick start's
      // defaults): only the texts the loader refuses are bad files.
      const refused = (text: string) => {
        try {
          parseConfig(text, { source: 'fuzz.yaml', env: {} });
          return false;
        } catch {
          return true;
        }
      };
      const badFile = fc.oneof(
        oneWrongValue.map(({ text }) => text),
        yamlText.filter(refused),
        fc.constantFrom(ALIAS_BOMB, `${good}\nextra: *missing\n`),
      );
      try {
        await check(
          fc.asyncProperty(badFile, async (text) => {
            writeFileSync(under.gateway.configPath, text);
            const request = { method: 'POST', target: '/admin/reload', headers: [ADMIN] };
            const { answer } = await send(request);
            expectStatus(request, answer, [400]);
          }),
          40,
        );
      } finally {
        writeFileSync(under.gateway.configPath, good);
      }
      const request = { method: 'POST', target: '/admin/reload', headers: [ADMIN] };
      expectStatus(request, (await send(request)).answer, [200]);
    });
  });

  describe('when the Telegram webhook gets generated updates', () => {
    let nextUpdateId = 1;
    const privateTextUpdate = fc
      .record({
        chatId: fc.integer({ min: 1, max: 2 ** 40 }),
        firstName: wellFormed(1, 20),
        text: wellFormed(1, 300).filter((text) => text.trim() !== ''),
      })
      .map(({ chatId, firstName, text }) => ({
        message: {
          message_id: nextUpdateId,
          date: Math.floor(Date.now() / 1000),
          chat: { id: chatId, type: 'private', first_name: firstName },
          from: { id: chatId, is_bot: false, first_name: firstName },
          text,
        },
      }));

    it('accepts well-formed text updates (200) and answers each', async () => {
      await check(
        fc.asyncProperty(privateTextUpdate, async (update) => {
          const body = JSON.stringify({ update_id: nextUpdateId++, ...update });
          const request = {
            method: 'POST',
            target: '/telegram/tg',
            headers: [TELEGRAM_SECRET, JSON_TYPE],
            body,
          };
          const { answer } = await send(request);
          expectStatus(request, answer, [200]);
          figures.telegram_accepted += 1;
        }),
        60,
      );
    });

    it('answers any body with 200 or 400, never 5xx', async () => {
      const mutatedUpdate = fc
        .tuple(
          privateTextUpdate,
          fc.constantFrom(
            'message',
            'message.chat',
            'message.from',
            'message.text',
            'message.chat.id',
            'update_id',
          ),
          fc.jsonValue({ maxDepth: 2 }),
        )
        .map(([update, path, value]) => {
          const copy = JSON.parse(JSON.stringify({ update_id: nextUpdateId++, ...update }));
          const keys = path.split('.');
          const last = keys.pop() as string;
          let target = copy;
          for (const key of keys) target = target[key];
          target[last] = value;
          return JSON.stringify(copy);
        });
      const body = fc.oneof(
        mutatedUpdate,
        fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? ''),
        anyUnits(60),
      );
      await check(
        fc.asyncProperty(body, async (text) => {
          const request = {
            method: 'POST',
            target: '/telegram/tg',
            headers: [TELEGRAM_SECRET, JSON_TYPE],
            body: text,
          };
          const { answer } = await send(request);
          expectStatus(request, answer, [200, 400]);
        }),
        200,
      );
    });
  });

  describe('when the Slack Events API gets generated events', () => {
    function signed(body: string, contentType = 'application/json'): RawRequest {
      const timestampSec = Math.floor(Date.now() / 1000);
      return {
        method: 'POST',
        target: '/slack/sl/events',
        headers: [
          ['content-type', contentType],
          ['x-slack-request-timestamp', String(timestampSec)],
          ['x-slack-signature', signSlackRequest(SECRETS.slackSigningSecret, body, timestampSec)],
        ],
        body,
      };
    }
    const directMessage = fc
      .record({
        text: wellFormed(1, 300).filter((text) => text.trim() !== ''),
        user: fc.stringMatching(/^U[A-Z0-9]{4,10}$/),
      })
      .map(({ text, user }) => eventEnvelope(messageEvent({ channel: 'D0FUZZ', text, user })));

    it('accepts well-formed direct messages (200) and answers each', async () => {
      await check(
        fc.asyncProperty(directMessage, async (envelope) => {
          const request = signed(JSON.stringify(envelope));
          const { answer } = await send(request);
          expectStatus(request, answer, [200]);
          figures.slack_accepted += 1;
        }),
        60,
      );
    });

    it('answers any signed body with 200 or 400, never 5xx', async () => {
      const mutatedEnvelope = fc
        .tuple(
          directMessage,
          fc.constantFrom('type', 'event', 'event_id', 'team_id', 'authorizations'),
          fc.jsonValue({ maxDepth: 2 }),
        )
        .map(([envelope, key, value]) => JSON.stringify({ ...envelope, [key]: value }));
      const mutatedEvent = fc
        .tuple(
          directMessage,
          fc.constantFrom(
            'type',
            'text',
            'user',
            'channel',
            'ts',
            'thread_ts',
            'subtype',
            'bot_id',
            'channel_type',
            'blocks',
          ),
          fc.jsonValue({ maxDepth: 2 }),
        )
        .map(([envelope, key, value]) =>
          JSON.stringify({ ...envelope, event: { ...(envelope.event as object), [key]: value } }),
        );
      const body = fc.oneof(
        mutatedEnvelope,
        mutatedEvent,
        fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? ''),
        anyUnits(60).map((challenge) => JSON.stringify({ type: 'url_verification', challenge })),
        anyUnits(60),
      );
      const contentType = fc.constantFrom(
        'application/json',
        'application/x-www-form-urlencoded',
        'text/plain',
      );
      await check(
        fc.asyncProperty(body, contentType, async (text, type) => {
          const form = type === 'application/x-www-form-urlencoded' ? `payload=${percentEncode(text)}` : text;
          const request = signed(form, type);
          const { answer } = await send(request);
          expectStatus(request, answer, [200, 400, 415]);
        }),
        200,
      );
    });
  });

  describe('when credentials are generated', () => {
    const headerValue = fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
      maxLength: 60,
    });
    /** Anything but the right value, near misses included. */
    const wrong = (secret: string) =>
      fc
        .oneof(
          headerValue,
          headerValue.map((suffix) => `${secret}${suffix}`),
          fc.nat({ max: secret.length - 1 }).map((length) => secret.slice(0, length)),
          fc.constantFrom(secret.toUpperCase(), ` ${secret}x`, `${secret}\t`),
        )
        .filter((value) => value.trim() !== secret);

    it('answers generated Authorization headers on the API and the admin API with 401', async () => {
      const routes: Array<[string, string]> = [
        ['POST', '/v1/messages'],
        ['GET', '/v1/messages/01ABC'],
        ['GET', '/v1/sessions/s1/events'],
        ['GET', '/admin/audit'],
        ['GET', '/admin/queues'],
        ['POST', '/admin/reload'],
      ];
      const scheme = fc.constantFrom('Bearer ', 'Basic ', '', 'Bearer  ', 'Token ');
      // The route's own secret with a mistake, or the other surface's secret.
      const attempt = fc.constantFrom(...routes).chain(([method, path]) => {
        const [own, other] = path.startsWith('/admin')
          ? [SECRETS.adminToken, SECRETS.apiKey]
          : [SECRETS.apiKey, SECRETS.adminToken];
        return fc.tuple(fc.constant(method), fc.constant(path), fc.oneof(wrong(own), fc.constant(other)));
      });
      await check(
        fc.asyncProperty(attempt, scheme, async ([method, path, value], prefix) => {
          const request: RawRequest = {
            method,
            target: path,
            headers: [['authorization', `${prefix}${value}`], JSON_TYPE],
            ...(method === 'POST'
              ? { body: JSON.stringify({ session_id: 's', user_id: 'u', text: 'forged' }) }
              : {}),
          };
          const { answer } = await send(request);
          expectStatus(request, answer, [401]);
        }),
        150,
      );
    });

    it('answers generated Telegram secret tokens with 401', async () => {
      await check(
        fc.asyncProperty(wrong(SECRETS.telegramSecretToken), async (token) => {
          const request: RawRequest = {
            method: 'POST',
            target: '/telegram/tg',
            headers: [['x-telegram-bot-api-secret-token', token], JSON_TYPE],
            body: JSON.stringify({ update_id: 1, message: { text: 'forged' } }),
          };
          const { answer } = await send(request);
          expectStatus(request, answer, [401]);
        }),
        100,
      );
    });

    it('answers generated Slack signature and timestamp headers with 401', async () => {
      const nowSec = Math.floor(Date.now() / 1000);
      const timestamp = fc.oneof(
        headerValue,
        fc.integer({ min: -(2 ** 40), max: 2 ** 40 }).map(String),
        fc.constantFrom(
          String(nowSec),
          `${nowSec}.5`,
          ` ${nowSec}`,
          '1e10',
          'NaN',
          '-0',
          String(nowSec - 301),
        ),
      );
      const signature = fc.oneof(
        headerValue,
        fc.stringMatching(/^v0=[0-9a-f]{0,70}$/),
        fc.constantFrom('v0=', 'v1=abc', `v0=${'0'.repeat(64)}`, `v0=${'g'.repeat(64)}`),
      );
      await check(
        fc.asyncProperty(fc.option(timestamp), fc.option(signature), async (sentTimestamp, sentSignature) => {
          const body = JSON.stringify(eventEnvelope(messageEvent({ channel: 'D0FORGED', text: 'forged' })));
          const headers: Array<[string, string]> = [JSON_TYPE];
          if (sentTimestamp !== null) headers.push(['x-slack-request-timestamp', sentTimestamp]);
          if (sentSignature !== null) headers.push(['x-slack-signature', sentSignature]);
          const request: RawRequest = { method: 'POST', target: '/slack/sl/events', headers, body };
          const { answer } = await send(request);
          expectStatus(request, answer, [401]);
        }),
        150,
      );
    });
  });

  describe('when the health, metrics and documentation routes get generated requests', () => {
    it('answers them below 500, in the error shape when refused', async () => {
      const path = fc.constantFrom(
        '/healthz',
        '/readyz',
        '/metrics',
        '/openapi.json',
        '/docs',
        '/docs/',
        '/docs/json',
        '/admin/reload',
      );
      await check(
        fc.asyncProperty(
          fc.constantFrom(...HTTP_METHODS),
          path,
          queryString(anyUnits(8)),
          fc.option(fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value) ?? '')),
          async (method, route, query, body) => {
            const headers: Array<[string, string]> = route.startsWith('/admin') ? [ADMIN] : [];
            if (body !== null) headers.push(JSON_TYPE);
            await send({ method, target: `${route}?${query}`, headers, ...(body === null ? {} : { body }) });
          },
        ),
        100,
      );
    });
  });

  describe('when requests are malformed below HTTP', () => {
    const token = fc.stringMatching(/^[A-Z]{1,8}$/);
    const garbage = (maxLength: number) => fc.uint8Array({ maxLength }).map((bytes) => Buffer.from(bytes));
    const requestLine = fc.oneof(
      fc
        .tuple(
          token,
          garbage(30),
          fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9.9', 'HTTP/1', ''),
        )
        .map(([method, target, version]) =>
          Buffer.concat([Buffer.from(`${method} /`), target, Buffer.from(` ${version}\r\n`)]),
        ),
      garbage(40).map((bytes) => Buffer.concat([bytes, Buffer.from('\r\n')])),
      fc
        .constantFrom(
          'GET /v1/messages/\xed\xa0\x80 HTTP/1.1\r\n',
          'GET  HTTP/1.1\r\n',
          'GET / HTTP/1.1 extra\r\n',
        )
        .map((line) => Buffer.from(line, 'latin1')),
    );
    const headerLines = fc.array(
      fc.oneof(
        fc
          .tuple(fc.stringMatching(/^[a-z-]{1,12}$/), garbage(20))
          .map(([name, value]) => Buffer.concat([Buffer.from(`${name}: `), value, Buffer.from('\r\n')])),
        garbage(20).map((bytes) => Buffer.concat([bytes, Buffer.from('\r\n')])),
        // No header that announces a body: the request would rightly wait for it.
        fc
          .constantFrom(
            ' folded: continuation\r\n',
            'content-length: -1\r\n',
            'content-length: 0\r\ncontent-length: 1\r\n',
            `x-huge: ${'h'.repeat(20_000)}\r\n`,
          )
          .map((line) => Buffer.from(line)),
      ),
      { maxLength: 4 },
    );

    it('answers 4xx in the error shape to malformed request lines and headers', async () => {
      await check(
        fc.asyncProperty(requestLine, headerLines, async (line, headers) => {
          const request = Buffer.concat([
            line,
            Buffer.from('host: x\r\n'),
            ...headers,
            Buffer.from('connection: close\r\n\r\n'),
          ]);
          await send(request);
        }),
        150,
      );
    });

    it('answers unknown routes and methods with 4xx in the error shape', async () => {
      const segment = anyUnits(12).map(percentEncode);
      await check(
        fc.asyncProperty(
          fc.oneof(fc.constantFrom(...HTTP_METHODS), token),
          fc.array(
            fc.oneof(
              segment,
              fc.constantFrom('v1', 'admin', 'telegram', 'slack', 'sl', 'tg', 'events', 'messages'),
            ),
            { minLength: 1, maxLength: 4 },
          ),
          async (method, segments) => {
            const request = { method, target: `/${segments.join('/')}`, headers: [AUTH] };
            await send(request);
          },
        ),
        150,
      );
    });
  });

  describe('after every input', () => {
    // Replies to the platforms are paced (1 per second per chat by default): the wait for them
    // grows with what was accepted.
    it('every accepted message ended with a final status and every platform message was answered', {
      timeout: 900_000,
    }, async () => {
      const final = new Set<string>(OUTCOME_KINDS);
      for (const id of acceptedIds) {
        await eventually(
          async () => {
            const answer = await exchange(under.gateway.url, {
              method: 'GET',
              target: `/v1/messages/${id}`,
              headers: [AUTH],
            });
            return answer.status === 200 && final.has(JSON.parse(answer.body).status);
          },
          30_000,
          `a final status for message ${id}`,
        );
        figures.api_final += 1;
      }
      await eventually(
        () => under.telegram.sentMessages().length >= figures.telegram_accepted,
        30_000 + figures.telegram_accepted * PACED_SEND_MS,
        'a Telegram answer to every accepted update',
      );
      figures.telegram_answered = under.telegram.sentMessages().length;
      await eventually(
        () => under.slack.callsTo('chat.postMessage').length >= figures.slack_accepted,
        30_000 + figures.slack_accepted * PACED_SEND_MS,
        'a Slack answer to every accepted event',
      );
      figures.slack_answered = under.slack.callsTo('chat.postMessage').length;
    });

    it('the process is alive and logged no crash', async () => {
      const { gateway } = under;
      const errors = gateway.logs.filter((line) => line.level >= 50);
      figures.error_log_lines = errors.length;
      const crashes = errors.filter((line) => /unhandled rejection|uncaught exception/.test(line.msg));
      figures.crashes =
        crashes.length + (gateway.child.exitCode === null && gateway.child.signalCode === null ? 0 : 1);
      expect(gateway.child.exitCode).toBeNull();
      expect(gateway.child.signalCode).toBeNull();
      expect((await send({ method: 'GET', target: '/healthz' })).answer.status).toBe(200);
      expect(crashes.map((line) => JSON.stringify(line).slice(0, 500))).toEqual([]);
    });
  });
});

// ---- random YAML configs ------------------------------------------------------------------

/** The problems of a config text, or a string saying how the parse broke its promise. */
function problemsOf(text: string): string[] | string {
  figures.configs_tried += 1;
  try {
    parseConfig(text, { source: 'fuzz.yaml', env: {} });
    return [];
  } catch (error) {
    const { code, details } = error as { code?: unknown; details?: { problems?: unknown } };
    const problems = details?.problems;
    if (
      typeof code !== 'string' ||
      !code.startsWith('SB_CONFIG_') ||
      !Array.isArray(problems) ||
      problems.length === 0
    ) {
      figures.configs_crashed += 1;
      return `not a coded config error: ${(error as Error)?.stack ?? String(error)}`;
    }
    return problems.map(String);
  }
}

describe('generated config files', () => {
  it('answers any YAML text with coded problems, never a crash', async () => {
    await check(
      fc.asyncProperty(fc.oneof(yamlText, anyUnits(200), fc.constant(ALIAS_BOMB)), async (text) => {
        const problems = problemsOf(text);
        if (typeof problems === 'string') throw new Error(`${problems}\nconfig:\n${text}`);
      }),
      300,
    );
  });

  it('names the path of the one wrong value', async () => {
    await check(
      fc.asyncProperty(oneWrongValue, async ({ where, text }) => {
        const problems = problemsOf(text);
        // A line for the value itself or for a part of it (`channels[0].api_keys[0]: …`).
        const named = (line: string) => [':', '.', '['].some((next) => line.startsWith(`${where}${next}`));
        if (typeof problems === 'string' || !problems.some(named)) {
          throw new Error(
            `expected a problem line for ${where}\nconfig:\n${text}\nproblems: ${JSON.stringify(problems)}`,
          );
        }
      }),
      200,
    );
  });

  it('`switchboard config check` exits 1 with `path: problem` lines and no stack trace', async () => {
    const dir = tempDir();
    const badConfig = fc.oneof(
      oneWrongValue.map(({ text }) => text),
      fc.constantFrom(ALIAS_BOMB, 'a: *missing', 'server: [', '- 1'),
    );
    await check(
      // Each run starts a process: a failure is reported as found, not shrunk through more runs.
      fc.asyncProperty(fc.noShrink(badConfig), async (text) => {
        figures.cli_config_checks += 1;
        const path = writeConfig(dir, text, 'generated.yaml');
        const { code, stdout, stderr } = await runCli(['config', 'check', '-c', path], { cwd: dir });
        const lines = stderr.trimEnd().split('\n');
        const wellFormed =
          code === 1 &&
          stdout === '' &&
          /^switchboard: SB_CONFIG_[A-Z_]+: /.test(lines[0] ?? '') &&
          lines.length > 1 &&
          lines.slice(1).every((line) => /^ {2}\S.*: \S/.test(line)) &&
          !/^\s+at /m.test(stderr);
        if (!wellFormed)
          throw new Error(`config check answered ${code}\nconfig:\n${text}\nstderr:\n${stderr}`);
      }),
      4,
      { sameInFull: true },
    );
  });
});
