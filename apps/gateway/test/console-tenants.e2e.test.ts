import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, chromiumPresent, launchBrowser } from './browser.js';
import { type ServeProcess, post, serveYaml } from './serve-process.js';

// The console under tenant admin tokens (docs/design.md §10) in Chromium against the real
// `switchboard serve`: a tenant token sees its one tenant, named in the header; the global token
// picks a tenant, and every page then reads that tenant's records only.

const GLOBAL = 'global-console-secret';
const ACME = 'acme-console-secret';
const BROWSER_TIMEOUT_MS = 120_000;

const CONFIG = `
admin: { token: ${GLOBAL} }
tenants:
  - id: acme
    admin_token: ${ACME}
    channels: [ { id: acme-api, type: openapi, prefix: /acme } ]
    routing:
      default: __discard__
  - id: bravo
    admin_token: bravo-console-secret
    channels: [ { id: bravo-api, type: openapi, prefix: /bravo } ]
    routing:
      default: __discard__
`;

describe.skipIf(!chromiumPresent)('console with tenant tokens (in a real browser)', () => {
  let gateway: ServeProcess;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    gateway = await serveYaml(CONFIG);
    for (const prefix of ['/acme', '/bravo']) {
      const answer = await post(`${gateway.url}${prefix}/messages`, {
        session_id: 's',
        user_id: 'u',
        text: 'hi',
      });
      expect(answer.body).toMatchObject({ status: 'discarded' });
    }
    browser = await launchBrowser();
    page = await browser.context.newPage();
  }, BROWSER_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop('SIGKILL');
  });

  async function logIn(token: string) {
    await page.goto(`${gateway.url}/admin/#/messages`);
    await page.getByLabel('Admin token').fill(token);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Messages' }).waitFor();
  }

  /** The channels of the messages the Messages page lists. */
  async function listedChannels(): Promise<string[]> {
    await page.locator('table tbody tr').first().waitFor();
    const cells = await page.locator('table tbody tr td').allTextContents();
    return [...new Set(cells.filter((cell) => cell.endsWith('-api')))].sort();
  }

  it(
    'shows a tenant token its one tenant: named in the header, no picker, its messages only',
    async () => {
      await logIn(ACME);
      await expect.poll(() => page.locator('.top .tenant').textContent()).toBe('Tenant: acme');
      expect(await page.getByLabel('Tenant').count()).toBe(0);
      await expect.poll(listedChannels).toEqual(['acme-api']);
      // The gateway-wide queues are not asked for; the page shows the tenant's sessions without a refusal.
      await page.getByRole('link', { name: 'Sessions & queues' }).click();
      await page.getByRole('heading', { name: 'Sessions & queues' }).waitFor();
      expect(await page.getByRole('alert').count()).toBe(0);
      await page.getByRole('button', { name: 'Log out' }).click();
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'gives the global token a tenant picker: every tenant at first, then the one picked',
    async () => {
      await logIn(GLOBAL);
      const picker = page.getByLabel('Tenant');
      expect(await picker.locator('option').allTextContents()).toEqual([
        'All tenants',
        'default',
        'acme',
        'bravo',
      ]);
      await expect.poll(listedChannels).toEqual(['acme-api', 'bravo-api']);
      const filtered = page.waitForRequest((request) => request.url().includes('tenant=bravo'));
      await picker.selectOption('bravo');
      await filtered;
      await expect.poll(listedChannels).toEqual(['bravo-api']);
    },
    BROWSER_TIMEOUT_MS,
  );
});
