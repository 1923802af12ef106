// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} strings are the config syntax under test, not templates
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { parseConfig } from '@switchboard/config';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../src/gateway.js';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import {
  type ServeProcess,
  eventually,
  post,
  resolvesWithin,
  serveYaml,
  tempDir,
  testConfig,
} from './serve-process.js';

// Tenant admin tokens against the real `switchboard serve` (docs/design.md §10): two tenants with
// their own tokens and messages of each; every admin route the server registers is called with
// tenant acme's token on bravo's ids (404), on gateway-wide routes (403), without a token (401),
// and with the global token (everything).

const GLOBAL = 'global-secret-1';
const ACME = 'acme-secret-1';
const BRAVO = 'bravo-secret-1';

const config = (
  backendUrl: string,
  acmeToken = '${ACME_ADMIN_TOKEN}',
  bravoLine = `admin_token: ${BRAVO}`,
) => `
admin: { token: ${GLOBAL}, protect: [metrics] }
channels: [ { id: api, type: openapi } ]
pipelines: [ { id: echo, type: echo } ]
routing: { default: echo }
tenants:
  - id: acme
    admin_token: "${acmeToken}"
    channels: [ { id: acme-api, type: openapi, prefix: /acme } ]
    pipelines: [ { id: acme-bot, type: http, url: "${backendUrl}" } ]
    routing:
      default: acme-bot
      rules: [ { name: acme-spam, type: message_content, operator: contains, value: spam, pipeline: __discard__ } ]
  - id: bravo
    ${bravoLine}
    channels: [ { id: bravo-api, type: openapi, prefix: /bravo } ]
    pipelines: [ { id: bravo-bot, type: http, url: "${backendUrl}" } ]
    routing:
      default: bravo-bot
      rules: [ { name: bravo-spam, type: message_content, operator: contains, value: spam, pipeline: __discard__ } ]
`;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A request with `token` (none: no Authorization header); answers status and JSON body. */
async function call(
  gateway: ServeProcess,
  method: string,
  path: string,
  token?: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response shapes
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = token === undefined ? {} : bearer(token);
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers,
    redirect: 'manual',
    // An event stream answered where a 404 was due never ends: fail instead of waiting for it.
    signal: AbortSignal.timeout(10_000),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: response.status, body: parsed };
}

/** One tenant's records, sent through its channel. */
interface TenantRecords {
  messageId: string;
  session: string;
  deadLetters: string[];
}

/**
 * The admin routes the gateway registers (`METHOD /path`, HEAD left out: fastify adds one per
 * GET), read from the server itself: a gateway built from the same file, in this process, never
 * started; its route tree printed in full.
 */
async function registeredAdminRoutes(yaml: string): Promise<string[]> {
  const dir = tempDir();
  const gateway = await createGateway({
    config: parseConfig(testConfig(dir, yaml), { env: { ACME_ADMIN_TOKEN: ACME } }),
    logger: pino({ level: 'silent' }),
  });
  await gateway.server.ready();
  const tree = gateway.server.printRoutes({ commonPrefix: false });
  await gateway.stop();
  rmSync(dir, { recursive: true, force: true });
  // Each line is a node: its depth (4 characters a level), its part of the path, its methods.
  const routes = new Set<string>();
  const paths: string[] = [];
  for (const line of tree.split('\n')) {
    const node = /^([│ ]*)[├└]── (\S+)(?: \(([^)]+)\))?$/.exec(line);
    if (node === null) continue;
    const depth = (node[1] as string).length / 4;
    const path = (paths[depth - 1] ?? '') + (node[2] as string);
    paths[depth] = path;
    if (!path.startsWith('/admin')) continue;
    for (const method of node[3]?.split(', ') ?? []) if (method !== 'HEAD') routes.add(`${method} ${path}`);
  }
  return [...routes].sort();
}

describe('tenant admin tokens (end to end)', () => {
  let backend: FakePipeline;
  let gateway: ServeProcess;
  let yaml: string;
  const acme: TenantRecords = { messageId: '', session: '', deadLetters: [] };
  const bravo: TenantRecords = { messageId: '', session: '', deadLetters: [] };

  beforeAll(async () => {
    backend = await startFakePipeline();
    // "fail" ends in a dead letter at once (a 400 is not retried); anything else is answered.
    backend.respond = async (request) =>
      request.text.includes('fail')
        ? { status: 400, body: { error: 'refused' } }
        : { status: 200, body: { replies: [{ text: `ok: ${request.text}` }] } };
    yaml = config(backend.url);
    gateway = await serveYaml(yaml, { env: { ACME_ADMIN_TOKEN: ACME } });

    for (const [prefix, records] of [
      ['/acme', acme],
      ['/bravo', bravo],
    ] as const) {
      const say = (text: string) =>
        post(`${gateway.url}${prefix}/messages`, { session_id: 's1', user_id: 'u1', text });
      const hello = await say('hello');
      expect(hello.body).toMatchObject({ status: 'completed' });
      records.messageId = hello.body?.id;
      expect((await say('spam offer')).body).toMatchObject({ status: 'discarded' });
      expect((await say('fail one')).body).toMatchObject({ status: 'dead_lettered' });
      expect((await say('fail two')).body).toMatchObject({ status: 'dead_lettered' });
    }
    const tenant = prefixOf;
    const all = await eventually(async () => {
      const answer = await call(gateway, 'GET', '/admin/dead-letters', GLOBAL);
      return (
        answer.body.items.length === 4 &&
        (answer.body.items as Array<{ id: string; tenant: string; session: string }>)
      );
    });
    for (const item of all) tenant(item.tenant).deadLetters.push(item.id);
    acme.session = all.find((item) => item.tenant === 'acme')?.session as string;
    bravo.session = all.find((item) => item.tenant === 'bravo')?.session as string;
    // Each tenant's session in handoff, taken over with the global token.
    for (const session of [acme.session, bravo.session]) {
      expect(
        (await call(gateway, 'POST', `/admin/sessions/${encodeURIComponent(session)}/handoff`, GLOBAL, {}))
          .status,
      ).toBe(201);
    }
  });
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await backend?.close();
  });

  const prefixOf = (tenant: string) => (tenant === 'acme' ? acme : bravo);
  const key = (records: TenantRecords) => encodeURIComponent(records.session);
  const tenantsOf = (items: Array<{ tenant: string }>) =>
    [...new Set(items.map((item) => item.tenant))].sort();
  const forbidden = { status: 403, body: { error: { code: 'SB_ADMIN_TENANT_FORBIDDEN' } } };

  /** Lists: tenant acme's token gets acme's records only; naming bravo is 403; the global token sees both. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response shapes
  async function checkList(path: string, items: (body: any) => Array<{ tenant: string }>) {
    const own = await call(gateway, 'GET', path, ACME);
    expect(own.status).toBe(200);
    expect(tenantsOf(items(own.body))).toEqual(['acme']);
    const separator = path.includes('?') ? '&' : '?';
    expect(await call(gateway, 'GET', `${path}${separator}tenant=bravo`, ACME)).toMatchObject(forbidden);
    expect((await call(gateway, 'GET', `${path}${separator}tenant=acme`, ACME)).status).toBe(200);
    const everything = await call(gateway, 'GET', path, GLOBAL);
    expect(tenantsOf(items(everything.body))).toEqual(expect.arrayContaining(['acme', 'bravo']));
    const one = await call(gateway, 'GET', `${path}${separator}tenant=bravo`, GLOBAL);
    expect(tenantsOf(items(one.body))).toEqual(['bravo']);
  }

  const sessionTenant = (entry: { session: string }) => ({
    tenant: decodeURIComponent(entry.session.split(':')[1] as string).replace(/-api$/, ''),
  });

  // What tenant acme's token may do on each admin route, and what the global token sees there.
  // A route the server registers without an entry here fails the test below.
  const PROBES: Record<string, () => Promise<void>> = {
    'GET /admin': async () => {
      // The console's page holds no data: any scope loads it (with a global token set, no token too).
      expect((await call(gateway, 'GET', '/admin', ACME)).status).toBe(308);
    },
    'GET /admin/': async () => {
      expect((await call(gateway, 'GET', '/admin/', ACME)).status).toBe(200);
    },
    'GET /admin/assets/:name': async () => {
      const page = String((await call(gateway, 'GET', '/admin/', ACME)).body);
      const asset = /\/admin\/assets\/[^"]+/.exec(page)?.[0] as string;
      expect((await call(gateway, 'GET', asset, ACME)).status).toBe(200);
    },
    'GET /admin/scope': async () => {
      expect((await call(gateway, 'GET', '/admin/scope', ACME)).body).toEqual({
        tenant: 'acme',
        label: 'tenant:acme',
        tenants: ['acme'],
      });
      expect((await call(gateway, 'GET', '/admin/scope', GLOBAL)).body).toEqual({
        tenant: null,
        label: 'admin',
        tenants: ['default', 'acme', 'bravo'],
      });
    },
    'GET /admin/audit': () => checkList('/admin/audit', (body) => body.items),
    'GET /admin/messages': () => checkList('/admin/messages', (body) => body.items),
    'GET /admin/messages/:id': async () => {
      expect(await call(gateway, 'GET', `/admin/messages/${bravo.messageId}`, ACME)).toMatchObject({
        status: 404,
        body: { error: { code: 'SB_HTTP_NOT_FOUND' } },
      });
      const own = await call(gateway, 'GET', `/admin/messages/${acme.messageId}`, ACME);
      expect(own).toMatchObject({ status: 200, body: { id: acme.messageId, tenant: 'acme' } });
      expect(await call(gateway, 'GET', `/admin/messages/${bravo.messageId}`, GLOBAL)).toMatchObject({
        status: 200,
        body: { tenant: 'bravo' },
      });
    },
    'GET /admin/routing': async () => {
      const own = await call(gateway, 'GET', '/admin/routing', ACME);
      expect(own.body).toMatchObject({
        rules: [{ name: 'acme-spam' }],
        default: { pipeline: 'acme-bot' },
        tenants: [],
      });
      expect(await call(gateway, 'GET', '/admin/routing?tenant=bravo', ACME)).toMatchObject(forbidden);
      const everything = await call(gateway, 'GET', '/admin/routing', GLOBAL);
      expect(everything.body.tenants.map((tenant: { id: string }) => tenant.id)).toEqual(['acme', 'bravo']);
      expect((await call(gateway, 'GET', '/admin/routing?tenant=bravo', GLOBAL)).body).toMatchObject({
        rules: [{ name: 'bravo-spam' }],
        tenants: [],
      });
    },
    'POST /admin/route': async () => {
      const dryRun = (channel: string, token: string) =>
        call(gateway, 'POST', '/admin/route', token, { channel, chat_id: 'c', text: 'spam' });
      const other = await dryRun('bravo-api', ACME);
      expect(other).toMatchObject({ status: 400, body: { error: { code: 'SB_HTTP_BAD_REQUEST' } } });
      expect(other.body.error.message).toContain('(known: acme-api)');
      expect((await dryRun('acme-api', ACME)).body).toMatchObject({ rule: 'acme-spam' });
      expect((await dryRun('bravo-api', GLOBAL)).body).toMatchObject({ rule: 'bravo-spam' });
    },
    'GET /admin/overview': async () => {
      const own = await call(gateway, 'GET', '/admin/overview', ACME);
      expect(own.status).toBe(200);
      expect(own.body.channels.map((channel: { id: string }) => channel.id)).toEqual(['acme-api']);
      expect(Object.keys(own.body.pipelines)).toEqual(['acme-bot']);
      // Its own outcomes: one completed, one discarded, two dead letters (more after a replay).
      expect(own.body.last_hour.completed).toBe(1);
      expect(own.body.load.active_sessions).toBeNull();
      expect(await call(gateway, 'GET', '/admin/overview?tenant=bravo', ACME)).toMatchObject(forbidden);
      const everything = await call(gateway, 'GET', '/admin/overview', GLOBAL);
      expect(everything.body.channels).toHaveLength(3);
      expect(everything.body.last_hour.completed).toBe(2);
      const bravoOnly = await call(gateway, 'GET', '/admin/overview?tenant=bravo', GLOBAL);
      expect(bravoOnly.body.channels.map((channel: { id: string }) => channel.id)).toEqual(['bravo-api']);
    },
    'GET /admin/queues': async () => {
      expect(await call(gateway, 'GET', '/admin/queues', ACME)).toMatchObject(forbidden);
      expect((await call(gateway, 'GET', '/admin/queues', GLOBAL)).status).toBe(200);
    },
    'GET /admin/sessions': async () => {
      // A turn of each tenant held running at the backend, so that both lists have something.
      const answer = backend.respond;
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      backend.respond = async (request) => {
        if (request.text === 'hold') await gate;
        return answer(request);
      };
      try {
        const before = backend.requests.length;
        for (const prefix of ['/acme', '/bravo'])
          await post(`${gateway.url}${prefix}/messages`, {
            session_id: 'held',
            user_id: 'u1',
            text: 'hold',
            wait: false,
          });
        await eventually(() => backend.requests.length >= before + 2, 10_000, 'both turns at the backend');
        const tenantsIn = (body: { waiting: unknown[]; running: unknown[] }) =>
          [...body.waiting, ...body.running].map((entry) => sessionTenant(entry as never).tenant).sort();
        const own = await call(gateway, 'GET', '/admin/sessions', ACME);
        expect(own.status).toBe(200);
        expect(tenantsIn(own.body)).toEqual(['acme']);
        expect(await call(gateway, 'GET', '/admin/sessions?tenant=bravo', ACME)).toMatchObject(forbidden);
        expect(tenantsIn((await call(gateway, 'GET', '/admin/sessions', GLOBAL)).body)).toEqual([
          'acme',
          'bravo',
        ]);
      } finally {
        release();
        backend.respond = answer;
      }
    },
    'GET /admin/handoffs': () => checkList('/admin/handoffs', (body) => body.items.map(sessionTenant)),
    'GET /admin/sessions/:key': async () => {
      expect(await call(gateway, 'GET', `/admin/sessions/${key(bravo)}`, ACME)).toMatchObject({
        status: 404,
        body: { error: { code: 'SB_HTTP_NOT_FOUND' } },
      });
      expect(await call(gateway, 'GET', `/admin/sessions/${key(acme)}`, ACME)).toMatchObject({
        status: 200,
        body: { session: acme.session, handoff: { session: acme.session } },
      });
      expect((await call(gateway, 'GET', `/admin/sessions/${key(bravo)}`, GLOBAL)).status).toBe(200);
    },
    'GET /admin/sessions/:key/events': async () => {
      expect((await call(gateway, 'GET', `/admin/sessions/${key(bravo)}/events`, ACME)).status).toBe(404);
      const stream = new AbortController();
      const own = await fetch(`${gateway.url}/admin/sessions/${key(acme)}/events`, {
        headers: bearer(ACME),
        signal: stream.signal,
      });
      expect(own.status).toBe(200);
      expect(own.headers.get('content-type')).toContain('text/event-stream');
      stream.abort();
    },
    'POST /admin/sessions/:key/handoff': async () => {
      const path = (records: TenantRecords) => `/admin/sessions/${key(records)}/handoff`;
      expect((await call(gateway, 'POST', path(bravo), ACME, {})).status).toBe(404);
      expect(await call(gateway, 'POST', path(acme), ACME, {})).toMatchObject({
        status: 200,
        body: { created: false },
      });
    },
    'POST /admin/sessions/:key/replies': async () => {
      const path = (records: TenantRecords) => `/admin/sessions/${key(records)}/replies`;
      expect((await call(gateway, 'POST', path(bravo), ACME, { text: 'hi' })).status).toBe(404);
      expect((await call(gateway, 'POST', path(acme), ACME, { text: 'hi' })).status).toBe(202);
      const transcript = await call(gateway, 'GET', `/admin/sessions/${key(acme)}`, ACME);
      expect(JSON.stringify(transcript.body.transcript)).toContain('tenant:acme');
    },
    'DELETE /admin/sessions/:key/handoff': async () => {
      const path = (records: TenantRecords) => `/admin/sessions/${key(records)}/handoff`;
      expect((await call(gateway, 'DELETE', path(bravo), ACME, { resume: 'skip' })).status).toBe(404);
      expect((await call(gateway, 'DELETE', path(acme), ACME, { resume: 'skip' })).status).toBe(200);
      // bravo's session is still in handoff: acme's token changed nothing of it.
      expect(
        (await call(gateway, 'GET', `/admin/sessions/${key(bravo)}`, GLOBAL)).body.handoff,
      ).not.toBeNull();
    },
    'GET /admin/dead-letters': () => checkList('/admin/dead-letters', (body) => body.items),
    'POST /admin/dead-letters/replay': async () => {
      const answer = await call(gateway, 'POST', '/admin/dead-letters/replay', ACME, {
        ids: [bravo.deadLetters[0], 'no-such-id'],
      });
      // Another tenant's dead letter answers exactly as an unknown id does.
      expect(answer.body.results).toEqual([
        {
          id: bravo.deadLetters[0],
          ok: false,
          error: {
            code: 'SB_DEAD_LETTER_NOT_FOUND',
            message: `no dead letter with id ${bravo.deadLetters[0]}`,
          },
        },
        {
          id: 'no-such-id',
          ok: false,
          error: { code: 'SB_DEAD_LETTER_NOT_FOUND', message: 'no dead letter with id no-such-id' },
        },
      ]);
    },
    'POST /admin/dead-letters/purge': async () => {
      const answer = await call(gateway, 'POST', '/admin/dead-letters/purge', ACME, {
        ids: [bravo.deadLetters[0]],
      });
      expect(answer.body.results).toMatchObject([{ ok: false, error: { code: 'SB_DEAD_LETTER_NOT_FOUND' } }]);
      const left = await call(gateway, 'GET', '/admin/dead-letters?tenant=bravo', GLOBAL);
      expect(left.body.items.map((item: { id: string }) => item.id)).toEqual(
        expect.arrayContaining(bravo.deadLetters),
      );
    },
    'POST /admin/dead-letters/:id/replay': async () => {
      expect(
        await call(gateway, 'POST', `/admin/dead-letters/${bravo.deadLetters[0]}/replay`, ACME),
      ).toMatchObject({
        status: 404,
        body: { error: { code: 'SB_DEAD_LETTER_NOT_FOUND' } },
      });
      expect(
        (await call(gateway, 'POST', `/admin/dead-letters/${acme.deadLetters[0]}/replay`, ACME)).status,
      ).toBe(202);
    },
    'DELETE /admin/dead-letters/:id': async () => {
      expect(
        (await call(gateway, 'DELETE', `/admin/dead-letters/${bravo.deadLetters[1]}`, ACME)).status,
      ).toBe(404);
      expect((await call(gateway, 'DELETE', `/admin/dead-letters/${acme.deadLetters[1]}`, ACME)).status).toBe(
        204,
      );
      expect(
        (await call(gateway, 'DELETE', `/admin/dead-letters/${bravo.deadLetters[1]}`, GLOBAL)).status,
      ).toBe(204);
    },
    'POST /admin/reload': async () => {
      expect(await call(gateway, 'POST', '/admin/reload', ACME)).toMatchObject(forbidden);
      expect((await call(gateway, 'POST', '/admin/reload', GLOBAL)).status).toBe(200);
    },
  };

  /** A path of `route` to call: its parameters filled with acme's ids. */
  const pathOf = (route: string) =>
    (route.split(' ')[1] as string)
      .replace(':id', acme.deadLetters[0] as string)
      .replace(':key', key(acme))
      .replace(':name', 'none.js');
  const CONSOLE_PAGES = ['GET /admin', 'GET /admin/', 'GET /admin/assets/:name'];

  it('has a tenant decision here for every admin route the server registers', async () => {
    expect(await registeredAdminRoutes(yaml)).toEqual(Object.keys(PROBES).sort());
  });

  it.each(Object.keys(PROBES))(
    '%s: acme’s token stays within acme; the global token sees all',
    async (route) => {
      await PROBES[route]?.();
    },
  );

  it.each(Object.keys(PROBES).filter((route) => !CONSOLE_PAGES.includes(route)))(
    '%s: without a token or with a wrong one is 401',
    async (route) => {
      const [method] = route.split(' ') as [string];
      const body = method === 'GET' || method === 'DELETE' ? undefined : {};
      for (const token of [undefined, 'not-a-token']) {
        expect(await call(gateway, method, pathOf(route), token, body)).toMatchObject({
          status: 401,
          body: { error: { code: 'SB_HTTP_UNAUTHORIZED' } },
        });
      }
    },
  );

  it('refuses a tenant token what admin.protect closes (/metrics), and never logs a token', async () => {
    expect(await call(gateway, 'GET', '/metrics', ACME)).toMatchObject(forbidden);
    expect((await call(gateway, 'GET', '/metrics', GLOBAL)).status).toBe(200);
    const logged = JSON.stringify(gateway.logs) + gateway.stderr.join('\n');
    for (const token of [ACME, BRAVO, GLOBAL]) expect(logged).not.toContain(token);
  });

  it('puts a reload’s added, changed and removed tenant tokens in force without a restart', async () => {
    // A conversation stream acme opened before: the reload that changes its token ends it.
    const stream = await fetch(`${gateway.url}/admin/sessions/${key(acme)}/events`, {
      headers: bearer(ACME),
    });
    expect(stream.status).toBe(200);
    const streamEnded = (async () => {
      const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
      while (!(await reader.read()).done) {}
      return true;
    })();
    // acme's token changes, bravo's is removed; then bravo gets one back.
    writeFileSync(
      gateway.configPath,
      readFileSync(gateway.configPath, 'utf8')
        .replace('${ACME_ADMIN_TOKEN}', 'acme-secret-2')
        .replace(`admin_token: ${BRAVO}`, ''),
    );
    expect(await call(gateway, 'POST', '/admin/reload', GLOBAL)).toMatchObject({
      status: 200,
      body: { changed: expect.arrayContaining(['tenants.acme: changed', 'tenants.bravo: changed']) },
    });
    expect((await call(gateway, 'GET', '/admin/audit', ACME)).status).toBe(401);
    expect(await resolvesWithin(streamEnded, 10_000, "the end of acme's stream under its old token")).toBe(
      true,
    );
    expect((await call(gateway, 'GET', '/admin/audit', 'acme-secret-2')).status).toBe(200);
    expect((await call(gateway, 'GET', '/admin/audit', BRAVO)).status).toBe(401);

    writeFileSync(
      gateway.configPath,
      readFileSync(gateway.configPath, 'utf8').replace(
        '  - id: bravo\n',
        '  - id: bravo\n    admin_token: bravo-secret-2\n',
      ),
    );
    gateway.child.kill('SIGHUP');
    await eventually(
      async () => (await call(gateway, 'GET', '/admin/scope', 'bravo-secret-2')).body.tenant === 'bravo',
      10_000,
      "bravo's new token in force after SIGHUP",
    );
    const logged = JSON.stringify(gateway.logs);
    for (const token of ['acme-secret-2', 'bravo-secret-2']) expect(logged).not.toContain(token);
  });
});
