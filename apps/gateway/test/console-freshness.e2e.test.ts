import type { Page, Request, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, chromiumPresent, launchBrowser } from './browser.js';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import { type ServeProcess, post, serveYaml } from './serve-process.js';

// The console never shows one thing's answer as another's (docs/design.md §7): in Debian's
// Chromium against the real `switchboard serve`, with one admin API answer held back by the
// browser's own request interception (the real answer, delivered late).

const BROWSER_TIMEOUT_MS = 120_000;

/**
 * Holds back the answers to the first `count` requests `matches` selects (later ones pass): each
 * is fetched from the gateway at once and handed to the page only on `release()`. A request the
 * page aborted meanwhile stays unanswered (Playwright refuses to fulfil it).
 */
async function holdAnswers(page: Page, matches: (url: URL) => boolean, count = Number.POSITIVE_INFINITY) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const held: Request[] = [];
  const handler = async (route: Route) => {
    if (held.length >= count) return route.continue();
    held.push(route.request());
    try {
      const response = await route.fetch();
      await released;
      await route.fulfill({ response });
    } catch {
      // Aborted by the page before its answer was handed over.
    }
  };
  await page.route(matches, handler);
  return {
    held,
    release,
    /** Stops holding answers (those held are released first). */
    async stop() {
      release();
      await page.unroute(matches, handler);
    },
  };
}

/**
 * Starts recording, in the page, every moment its content shows `stale` while `current()` holds:
 * a MutationObserver checks each change before it is painted. The page's script is not typed
 * for the DOM here, hence the string.
 */
async function recordStale(page: Page, current: string, stale: string): Promise<void> {
  await page.evaluate(`(() => {
    window.staleObserver?.disconnect();
    window.staleSeen = [];
    const check = () => {
      const shown = document.querySelector('main')?.textContent ?? '';
      if ((${current})() && shown.includes(${JSON.stringify(stale)})) window.staleSeen.push(shown.slice(0, 200));
    };
    window.staleObserver = new MutationObserver(check);
    window.staleObserver.observe(document.body, { subtree: true, childList: true, characterData: true });
  })()`);
}

/** How the first request of `page` whose address holds `part` ends: aborted, or answered. */
function endOfRequest(page: Page, part: string): Promise<'aborted' | 'answered'> {
  return new Promise((resolve) => {
    page.on('requestfailed', (request) => {
      if (request.url().includes(part)) resolve('aborted');
    });
    page.on('requestfinished', (request) => {
      if (request.url().includes(part)) resolve('answered');
    });
  });
}

function staleSeen(page: Page): Promise<string[]> {
  return page.evaluate('window.staleSeen') as Promise<string[]>;
}

describe.skipIf(!chromiumPresent)('console freshness (in a real browser)', () => {
  let gateway: ServeProcess;
  /** The `bot` pipeline's backend: it fails fatally (400) until `healthy`, so its messages are dead-lettered. */
  let backend: FakePipeline;
  let healthy = false;
  let browser: Browser;
  let page: Page;
  /** Message ids by their text. */
  const ids = new Map<string, string>();

  beforeAll(async () => {
    backend = await startFakePipeline();
    backend.respond = async (request) =>
      healthy
        ? { status: 200, body: { replies: [{ text: `ok: ${request.text}` }] } }
        : { status: 400, body: { error: 'bad request' } };
    // No admin token: the browser on loopback reads the admin API without logging in.
    gateway = await serveYaml(`pipelines:
  - { id: echo, type: echo }
  - { id: bot, type: http, url: "${backend.url}" }
routing:
  default: echo
  rules:
    # Completed messages are not audited; discarded ones are, so a search finds them.
    - { name: drop-probes, type: message_content, operator: contains, value: probe, pipeline: __discard__ }
    - { name: to-bot, type: message_content, operator: starts_with, value: "bot:", pipeline: bot }
`);
    for (const text of ['alpha-path-marker', 'beta-path-marker', 'oldprobe', 'newprobe']) {
      const answer = await post(`${gateway.url}/v1/messages`, { session_id: text, user_id: 'u', text });
      expect(answer.body?.status).toBe(text.endsWith('probe') ? 'discarded' : 'completed');
      ids.set(text, answer.body?.id);
    }
    const failed = await post(`${gateway.url}/v1/messages`, {
      session_id: 'b',
      user_id: 'u',
      text: 'bot: replay me',
    });
    expect(failed.body).toMatchObject({ status: 'dead_lettered', reason: 'fatal_error' });
    browser = await launchBrowser();
    page = await browser.context.newPage();
  }, BROWSER_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop('SIGKILL');
    await backend?.close();
  });

  const idOf = (text: string) => ids.get(text) as string;
  const path = () => page.locator('.path');

  async function openMessage(text: string) {
    await page.goto(`${gateway.url}/admin/#/messages/${idOf(text)}`);
    await expect.poll(() => path().textContent(), { timeout: 20_000 }).toContain(text);
  }

  it(
    "never shows message A's path under message B's heading while B's answer is slow, and shows B's once it comes",
    async () => {
      await openMessage('alpha-path-marker');
      const beta = idOf('beta-path-marker');
      await recordStale(page, `() => location.hash.includes(${JSON.stringify(beta)})`, 'alpha-path-marker');
      const slow = await holdAnswers(page, (url) => url.pathname === `/admin/messages/${beta}`);
      try {
        await page.evaluate(`location.hash = '#/messages/${beta}'`);
        await page.getByRole('heading', { name: `Message ${beta}` }).waitFor();
        await expect.poll(() => slow.held.length, { timeout: 20_000 }).toBeGreaterThan(0);
        slow.release();
        await expect.poll(() => path().textContent(), { timeout: 20_000 }).toContain('beta-path-marker');
      } finally {
        await slow.stop();
      }
      expect(await staleSeen(page)).toEqual([]);
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    "never shows message A's late answer under message B's heading: a poll of A still under way is abandoned and B loads at once",
    async () => {
      await openMessage('alpha-path-marker');
      const alpha = idOf('alpha-path-marker');
      const beta = idOf('beta-path-marker');
      await recordStale(page, `() => location.hash.includes(${JSON.stringify(beta)})`, 'alpha-path-marker');
      // The page polls every 3 s: the next poll of A is held until B's page is shown.
      const slow = await holdAnswers(page, (url) => url.pathname === `/admin/messages/${alpha}`);
      const alphaEnded = endOfRequest(page, `/admin/messages/${alpha}`);
      try {
        await expect.poll(() => slow.held.length, { timeout: 20_000 }).toBeGreaterThan(0);
        await page.evaluate(`location.hash = '#/messages/${beta}'`);
        await page.getByRole('heading', { name: `Message ${beta}` }).waitFor();
        // B's page loads its own path while A's answer is still held back.
        await expect.poll(() => path().textContent(), { timeout: 20_000 }).toContain('beta-path-marker');
        expect(await alphaEnded).toBe('aborted');
      } finally {
        await slow.stop();
      }
      expect(await staleSeen(page)).toEqual([]);
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    "applies only the newest search: an older search answering later never replaces the newer one's results",
    async () => {
      await page.goto(`${gateway.url}/admin/#/messages`);
      await page.getByRole('heading', { name: 'Messages' }).waitFor();
      const searchFor = async (text: string) => {
        await page.getByLabel('Text contains').fill(text);
        await page.getByRole('button', { name: 'Search' }).click();
      };
      const rows = (text: string) => page.getByRole('row').filter({ hasText: text });
      await recordStale(page, `() => location.hash.includes('newprobe')`, 'oldprobe');
      const slow = await holdAnswers(
        page,
        (url) => url.pathname === '/admin/messages' && url.searchParams.get('text') === 'oldprobe',
      );
      const olderEnded = endOfRequest(page, 'oldprobe');
      try {
        await searchFor('oldprobe');
        await expect.poll(() => slow.held.length, { timeout: 20_000 }).toBe(1);
        await searchFor('newprobe');
        await expect.poll(() => rows('newprobe').count(), { timeout: 20_000 }).toBe(1);
        // The older search is cancelled, not merely outrun: its answer, released now, has no taker.
        slow.release();
        expect(await olderEnded).toBe('aborted');
      } finally {
        await slow.stop();
      }
      expect(await staleSeen(page)).toEqual([]);
      expect(await rows('newprobe').count()).toBe(1);
      expect(await rows('oldprobe').count()).toBe(0);
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'lists the dead letters as they are after a replay: the poll under way when it is made is abandoned and the list loads again',
    async () => {
      await page.goto(`${gateway.url}/admin/#/dead-letters`);
      const row = page
        .getByRole('table', { name: 'Dead letters' })
        .getByRole('row')
        .filter({ hasText: 'bot: replay me' });
      await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(1);
      // The page polls every 5 s: the next poll is held, as a slow one would be. Its answer, read
      // before the replay, still lists the dead letter.
      const slow = await holdAnswers(page, (url) => url.pathname === '/admin/dead-letters', 1);
      try {
        await expect.poll(() => slow.held.length, { timeout: 20_000 }).toBe(1);
        const pollEnded = endOfRequest(page, '/admin/dead-letters?');
        healthy = true;
        await row.getByRole('button', { name: /^Replay/ }).click();
        // The replayed dead letter leaves the list while the poll of before is still held back.
        await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(0);
        expect(await pollEnded).toBe('aborted');
      } finally {
        await slow.stop();
      }
    },
    BROWSER_TIMEOUT_MS,
  );
});
