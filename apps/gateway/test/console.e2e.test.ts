import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, chromiumPresent, launchBrowser } from './browser.js';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, get, post, serveYaml, useCleanups } from './serve-process.js';

// The operator console (docs/design.md §7) in Debian's Chromium against the real `switchboard
// serve`: a SQLite file, the admin token set, the HTTP channel on loopback. Screenshots of each
// page go to artifacts/console/ (not committed; docs/console-*.png are copies of two of them).

const TOKEN = 's3cret';
const ARTIFACTS = fileURLToPath(new URL('../../../artifacts/console/', import.meta.url));
const BROWSER_TIMEOUT_MS = 120_000;

/**
 * A gateway with a discarding rule and a `bot` pipeline (one turn at a time) that fails fatally
 * (400) until `healthy`; while `hold` is set, it holds messages saying `hold` until that resolves.
 */
async function consoleGateway(admin: string) {
  const backend = await startFakePipeline();
  const state: { healthy: boolean; hold: Promise<void> | null } = { healthy: false, hold: null };
  backend.respond = async (request) => {
    if (state.hold !== null && request.text.includes('hold')) {
      await state.hold;
      return { status: 200, body: { replies: [{ text: `held: ${request.text}` }] } };
    }
    return state.healthy
      ? { status: 200, body: { replies: [{ text: `ok: ${request.text}` }] } }
      : { status: 400, body: { error: 'bad request' } };
  };
  const gateway = await serveYaml(
    `${admin}
pipelines:
  - { id: echo, type: echo }
  - { id: bot, type: http, url: "${backend.url}", max_concurrency: 1 }
routing:
  default: echo
  rules:
    - { name: drop-ads, type: message_content, operator: contains, value: "buy now", pipeline: __discard__ }
    - { name: to-bot, type: message_content, operator: starts_with, value: "bot:", pipeline: bot }
`,
    { env: { ADMIN_TOKEN: TOKEN } },
  );
  return { backend, state, gateway };
}

/** The page's script, as the page names it: the access tests ask for it like a browser would. */
async function scriptPath(gateway: ServeProcess): Promise<string> {
  const html = await (await fetch(`${gateway.url}/admin/`)).text();
  const path = /src="(\/admin\/assets\/[^"]+\.js)"/.exec(html)?.[1];
  if (path === undefined) throw new Error(`no script in the console page:\n${html}`);
  return path;
}

describe.skipIf(!chromiumPresent)('console (in a real browser)', () => {
  let gateway: ServeProcess;
  let backend: FakePipeline;
  let state: { healthy: boolean; hold: Promise<void> | null };
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    ({ gateway, backend, state } = await consoleGateway('admin: { token: "${ADMIN_TOKEN}" }'));
    browser = await launchBrowser();
    page = await browser.context.newPage();
  }, BROWSER_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop('SIGKILL');
    await backend?.close();
  });

  const screenshot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });

  async function logIn(token: string) {
    await page.getByLabel('Admin token').fill(token);
    await page.getByRole('button', { name: 'Log in' }).click();
  }

  it(
    'refuses a wrong token: the admin route answers 401 and the login form says so',
    async () => {
      await page.goto(`${gateway.url}/admin/`);
      const refused = page.waitForResponse((response) => response.url().endsWith('/admin/scope'));
      await logIn('not-the-token');
      expect((await refused).status()).toBe(401);
      await expect.poll(() => page.getByRole('alert').textContent()).toContain('The token was refused (401)');
      await screenshot('login-refused');
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'logs in with the token, and the overview chart counts and draws 50 messages sent after the page opened',
    async () => {
      await logIn(TOKEN);
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      const completed = page.locator('[data-outcome="completed"] strong');
      await expect.poll(() => completed.textContent()).toBe('0');
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, index) =>
          post(`${gateway.url}/v1/messages`, {
            session_id: `s${index % 7}`,
            user_id: 'u',
            text: `hello ${index}`,
          }),
        ),
      );
      expect(answers.map((answer) => answer.body?.status)).toEqual(Array(50).fill('completed'));
      // No reload: the page polls the overview and redraws.
      await expect.poll(() => completed.textContent(), { timeout: 20_000 }).toBe('50');
      expect(await page.locator('.chart canvas').count()).toBeGreaterThan(0);
      await expect
        .poll(() => page.locator('.chart').getAttribute('aria-label'))
        .toContain('50 in the last 60 minutes');
      // What the chart hands to uPlot, not only the server's totals.
      await expect.poll(() => page.locator('.chart').getAttribute('data-total')).toBe('50');
      await screenshot('overview');
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'finds a discarded message by its text and opens its path, which names the rule',
    async () => {
      const discarded = await post(`${gateway.url}/v1/messages`, {
        session_id: 'ads',
        user_id: 'spammer',
        text: 'buy now: cheap watches',
      });
      expect(discarded.body?.status).toBe('discarded');
      await page.getByRole('link', { name: 'Messages' }).click();
      await page.getByLabel('Text contains').fill('cheap watches');
      await page.getByRole('button', { name: 'Search' }).click();
      const row = page.getByRole('row').filter({ hasText: 'cheap watches' });
      await expect.poll(() => row.count()).toBe(1);
      expect(await row.textContent()).toContain('discarded (rule)');
      await screenshot('messages');

      await row.getByRole('link').click();
      await page.getByRole('heading', { name: `Message ${discarded.body?.id}` }).waitFor();
      const routed = page
        .locator('.path > li')
        .filter({ has: page.getByRole('heading', { name: 'Routed' }) });
      await expect.poll(() => routed.textContent()).toContain('drop-ads');
      expect(await page.locator('.path').textContent()).toContain('discarded (rule)');
      await screenshot('message');
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'replays a dead letter once the pipeline recovers and shows the replay complete',
    async () => {
      const failed = await post(`${gateway.url}/v1/messages`, {
        session_id: 'b',
        user_id: 'u',
        text: 'bot: help',
      });
      expect(failed.body).toMatchObject({ status: 'dead_lettered', reason: 'fatal_error' });
      await page.getByRole('link', { name: 'Dead letters' }).click();
      const row = page
        .getByRole('table', { name: 'Dead letters' })
        .getByRole('row')
        .filter({ hasText: 'bot: help' });
      await expect.poll(() => row.count()).toBe(1);
      expect(await row.textContent()).toContain('fatal_error');
      expect(await row.textContent()).toContain('400');

      state.healthy = true;
      await row.getByRole('button', { name: /^Replay/ }).click();
      // The replayed dead letter leaves the list; its replay's state is shown until the message ends.
      await expect.poll(() => row.count()).toBe(0);
      const replay = page
        .getByRole('table', { name: 'Replays' })
        .getByRole('row')
        .filter({ hasText: 'bot: help' });
      await expect
        .poll(() => replay.locator('.replay-state').textContent(), { timeout: 20_000 })
        .toBe('completed');
      expect(backend.requests.at(-1)).toMatchObject({ text: 'bot: help' });
      const status = await get(`${gateway.url}/v1/messages/${failed.body?.id}`);
      expect(status.body).toMatchObject({ status: 'completed', replies: [{ text: 'ok: bot: help' }] });
      await screenshot('dead-letters');
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'shows the rules with their hits and dry-runs a message through the same router',
    async () => {
      await page.getByRole('link', { name: 'Routing' }).click();
      const dropAds = page
        .getByRole('row')
        .filter({ has: page.getByRole('rowheader', { name: 'drop-ads' }) });
      await expect.poll(() => dropAds.locator('.num').textContent()).toBe('1');
      await page.getByLabel('Channel').fill('api');
      await page.getByLabel('Text').fill('buy now! limited offer');
      await page.getByRole('button', { name: 'Dry run' }).click();
      const result = page.getByRole('region', { name: 'Result' });
      await expect.poll(() => result.locator('dd.rule').textContent()).toBe('drop-ads');
      expect(await result.textContent()).toContain('__discard__');
      await screenshot('routing');
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'shows sessions and queues: a held turn with its session and age, the session waiting behind it, and the queue per pipeline on the overview, on a phone-sized screen too',
    async () => {
      let release = () => {};
      state.hold = new Promise((resolve) => {
        release = resolve;
      });
      const bearer = { authorization: `Bearer ${TOKEN}` };
      const running = async () => (await get(`${gateway.url}/admin/sessions`, bearer)).body.running ?? [];
      // One at a time, so that `held-one` is the turn running and `held-two` waits for bot's one slot.
      const held = post(`${gateway.url}/v1/messages`, {
        session_id: 'held-one',
        user_id: 'u',
        text: 'bot: hold one',
      });
      await expect.poll(async () => (await running()).length).toBe(1);
      const waiting = post(`${gateway.url}/v1/messages`, {
        session_id: 'held-two',
        user_id: 'u',
        text: 'bot: hold two',
      });
      try {
        await page.getByRole('link', { name: 'Sessions & queues' }).click();
        await page.getByRole('heading', { name: 'Sessions & queues' }).waitFor();
        await expect.poll(() => page.getByRole('rowheader', { name: 'echo' }).count()).toBe(1);
        const turns = page.getByRole('table', { name: 'Turns running' });
        await expect
          .poll(() => turns.getByRole('rowheader').allTextContents())
          .toEqual([expect.stringContaining('held-one')]);
        const turn = turns.getByRole('row').filter({ has: page.getByRole('rowheader') });
        expect(await turn.locator('td').first().textContent()).toBe('bot');
        // Its age: a duration, growing while the page polls.
        expect(await turn.locator('td').nth(1).textContent()).toMatch(/^\d+(\.\d)? (ms|s)$/);
        const longest = page.getByRole('table', { name: 'Sessions waiting longest for a slot' });
        await expect
          .poll(() => longest.getByRole('rowheader').allTextContents())
          .toEqual([expect.stringContaining('held-two')]);
        await screenshot('sessions');
        await page.setViewportSize({ width: 390, height: 844 });
        await page.getByRole('link', { name: 'Overview' }).click();
        await page.getByRole('heading', { name: 'Overview' }).waitFor();
        // Running, waiting, oldest wait for `bot`: one held, one waiting for a while.
        const bot = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'bot' }) });
        await expect
          .poll(() => bot.locator('td').allTextContents())
          .toEqual([
            '1',
            '1',
            expect.stringMatching(/^\d+(\.\d)? (ms|s)$/),
            expect.any(String),
            expect.any(String),
          ]);
      } finally {
        release();
        state.hold = null;
      }
      expect((await held).body?.status).toBe('completed');
      expect((await waiting).body?.status).toBe('completed');
      // Nothing wider than the screen but the tables' own scrolling boxes.
      // A string, so this Node-typed file need not know the DOM's types.
      const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
      expect(overflow).toBeLessThanOrEqual(0);
      await screenshot('overview-phone');
    },
    BROWSER_TIMEOUT_MS,
  );
});

describe('console access (end to end)', () => {
  const cleanup = useCleanups();

  async function serve(admin: string) {
    const { backend, gateway } = await consoleGateway(admin);
    cleanup(() => backend.close());
    cleanup(() => gateway.stop('SIGKILL'));
    return gateway;
  }

  describe('when no admin token is configured', () => {
    it('serves the page to loopback clients and answers 403 to others, for the page, its script and its data', async () => {
      const gateway = await serve('');
      const script = await scriptPath(gateway);
      const page = await fetch(`${gateway.url}/admin/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect((await get(`${gateway.url}${script}`)).status).toBe(200);
      // A request a proxy forwarded is not a loopback client's (see access-control.e2e.test.ts).
      const remote = { 'x-forwarded-for': '203.0.113.9' };
      for (const path of ['/admin', '/admin/', script, '/admin/queues', '/admin/dead-letters']) {
        const answer = await get(`${gateway.url}${path}`, remote);
        expect({ path, status: answer.status }).toEqual({ path, status: 403 });
        expect(answer.body.error.code).toBe('SB_HTTP_FORBIDDEN');
      }
    });
  });

  describe('when an admin token is configured', () => {
    it('serves the page and its script without it, and answers 401 to a data route with a wrong one', async () => {
      const gateway = await serve('admin: { token: "${ADMIN_TOKEN}" }');
      const script = await scriptPath(gateway);
      const remote = { 'x-forwarded-for': '203.0.113.9' };
      expect((await get(`${gateway.url}/admin/`, remote)).status).toBe(200);
      expect((await get(`${gateway.url}${script}`, remote)).status).toBe(200);
      const wrong = await get(`${gateway.url}/admin/queues`, { authorization: 'Bearer nope' });
      expect(wrong.status).toBe(401);
      expect(wrong.body.error.code).toBe('SB_HTTP_UNAUTHORIZED');
      expect((await get(`${gateway.url}/admin/queues`, { authorization: `Bearer ${TOKEN}` })).status).toBe(
        200,
      );
      expect((await get(`${gateway.url}/admin/assets/missing.js`)).status).toBe(404);
    });
  });
});
