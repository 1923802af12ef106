import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, chromiumPresent, launchBrowser } from './browser.js';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, eventually, get, serveYaml } from './serve-process.js';

// Human handoff from the operator console (docs/console.md), in Debian's Chromium against the
// real `switchboard serve`: a Telegram chat (the fake Bot API) answered by an `http` pipeline,
// taken over by an operator, answered by hand, and handed back. Screenshots go to
// artifacts/console/ (not committed).

const TOKEN = 's3cret';
const ARTIFACTS = fileURLToPath(new URL('../../../artifacts/console/', import.meta.url));
const BROWSER_TIMEOUT_MS = 120_000;

const alice = { id: 111_222_333, is_bot: false, first_name: 'Alice', username: 'alice' };
const aliceChat = { id: alice.id, first_name: alice.first_name, type: 'private' };

describe.skipIf(!chromiumPresent)('console handoff (in a real browser)', () => {
  let telegram: FakeTelegram;
  let backend: FakePipeline;
  let gateway: ServeProcess;
  let browser: Browser;
  let page: Page;
  /** While set, the pipeline holds its answers until it resolves. */
  let hold: Promise<void> | null = null;
  /** Alice's session key, as the gateway handed it to the pipeline. */
  let session: string;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    telegram = await startFakeTelegram();
    backend = await startFakePipeline();
    backend.respond = async (request) => {
      if (hold !== null) await hold;
      return { status: 200, body: { replies: [{ text: `bot: ${request.text}` }] } };
    };
    gateway = await serveYaml(
      `admin: { token: "\${ADMIN_TOKEN}", label: alice-operator }
channels:
  - { id: tg, type: telegram, token: "${telegram.token}", mode: polling, api_root: "${telegram.url}/" }
pipelines:
  - { id: bot, type: http, url: "${backend.url}" }
routing:
  default: bot
`,
      { env: { ADMIN_TOKEN: TOKEN } },
    );
    browser = await launchBrowser();
    page = await browser.context.newPage();
    await page.goto(`${gateway.url}/admin/`);
    await page.getByLabel('Admin token').fill(TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
  }, BROWSER_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop('SIGKILL');
    await backend?.close();
    await telegram?.close();
  });

  const screenshot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
  const fromAlice = (text: string) =>
    telegram.pushUpdate({ message: telegram.message({ chat: aliceChat, from: alice, text }) });
  const bearer = { authorization: `Bearer ${TOKEN}` };
  const transcript = () => page.getByRole('list', { name: 'Transcript' });

  it(
    'takes a session over from its row on the sessions page while its turn runs, and opens its conversation',
    async () => {
      let release = () => {};
      hold = new Promise((resolve) => {
        release = resolve;
      });
      try {
        fromAlice('hello bot');
        const [request] = await eventually(() => backend.requests.length > 0 && backend.requests);
        session = request!.session.key;
        await page.getByRole('link', { name: 'Sessions & queues' }).click();
        const row = page
          .getByRole('table', { name: 'Turns running' })
          .getByRole('row')
          .filter({ has: page.getByRole('rowheader', { name: session }) });
        await row.getByRole('button', { name: /^Take over/ }).click();
        await page.getByRole('heading', { name: `Session ${session}` }).waitFor();
        await page.getByRole('heading', { name: 'In handoff' }).waitFor();
        // The token's label names the operator.
        expect(await page.locator('.handoff').textContent()).toContain('operator:alice-operator');
      } finally {
        release();
        hold = null;
      }
      const handoffs = await get(`${gateway.url}/admin/handoffs`, bearer);
      expect(handoffs.body.items.map((item: { session: string }) => item.session)).toEqual([session]);
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    "shows the user's next message in the transcript without a reload, and the bot does not get it",
    async () => {
      // Gone after a reload: the page must show the message through its event stream.
      await page.evaluate('window.notReloaded = true');
      const asked = backend.requests.length;
      fromAlice('can a human help me?');
      await expect
        .poll(() => transcript().textContent(), { timeout: 20_000 })
        .toContain('can a human help me?');
      expect(await page.evaluate('window.notReloaded')).toBe(true);
      await expect.poll(() => page.locator('.handoff .unread').textContent()).toBe('1 unread');
      expect(backend.requests.length).toBe(asked);
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'lists the session in the inbox with its unread message and last text, and opens it from there',
    async () => {
      await page.getByRole('link', { name: 'Inbox' }).click();
      const row = page
        .getByRole('table', { name: 'Sessions in handoff' })
        .getByRole('row')
        .filter({ has: page.getByRole('rowheader', { name: session }) });
      await expect.poll(() => row.locator('td').first().textContent()).toBe('1');
      expect(await row.textContent()).toContain('can a human help me?');
      expect(await row.textContent()).toContain('Alice');
      expect(await row.textContent()).toContain('operator:alice-operator');
      await screenshot('inbox');
      await row.getByRole('link', { name: session }).click();
      await page.getByRole('heading', { name: `Session ${session}` }).waitFor();
      await expect.poll(() => transcript().textContent()).toContain('can a human help me?');
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    "sends the operator's reply to the Telegram chat and shows it in the transcript",
    async () => {
      await page.evaluate('window.notReloaded = true');
      await page.getByLabel('Reply').fill('Hi Alice, a human here.');
      await page.getByRole('button', { name: 'Send reply' }).click();
      await eventually(() => telegram.deliveredTo(alice.id).includes('Hi Alice, a human here.'));
      const operatorLines = transcript().locator('.from-operator');
      await expect
        .poll(() => operatorLines.textContent(), { timeout: 20_000 })
        .toContain('Hi Alice, a human here.');
      expect(await operatorLines.textContent()).toContain('Operator alice-operator');
      expect(await page.evaluate('window.notReloaded')).toBe(true);
      expect(await page.getByLabel('Reply').inputValue()).toBe('');
      await expect.poll(() => page.locator('.handoff .unread').textContent()).toBe('0 unread');
      await screenshot('conversation');
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'hands the session back: the bot gets the held message as one turn and answers it, and the session leaves the inbox',
    async () => {
      await page.getByLabel(/Give the held messages/).check();
      await page.getByRole('button', { name: 'Hand back' }).click();
      await page.getByRole('heading', { name: 'The bot answers' }).waitFor();
      await expect
        .poll(() => page.getByRole('status').textContent())
        .toContain('1 held message given to the bot as one turn');
      const turn = await eventually(() =>
        backend.requests.find((request) => request.text.includes('can a human help me?')),
      );
      expect(turn.session.key).toBe(session);
      await eventually(() =>
        telegram
          .deliveredTo(alice.id)
          .some((text) => text.includes('bot:') && text.includes('can a human help me?')),
      );
      expect((await get(`${gateway.url}/admin/handoffs`, bearer)).body.items).toEqual([]);
      await page.getByRole('button', { name: /^Take over/ }).waitFor();
    },
    BROWSER_TIMEOUT_MS,
  );
});
