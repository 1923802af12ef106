import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@switchboard/config';
import { type QueryPool, silentLogger } from '@switchboard/core';
import { afterEach, describe, expect, it } from 'vitest';
import type { Channels } from '../../src/channels.js';
import type { LiveRouting } from '../../src/live-routing.js';
import type { Pipelines } from '../../src/pipelines.js';
import { createLiveConfig } from '../../src/reload/live-config.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const BASE =
  'server: { host: 127.0.0.1, port: 0 }\npipelines: [{ id: echo, type: echo }]\nrouting: { default: echo }\n';

/** A live config whose channel puts wait for `release`, and what it did. */
async function liveWithSlowChannels() {
  const dir = mkdtempSync(join(tmpdir(), 'live-config-'));
  dirs.push(dir);
  const path = join(dir, 'switchboard.yaml');
  writeFileSync(path, `${BASE}channels: [{ id: api, type: openapi }]\n`);
  const config = await loadConfig(path);
  const puts: string[] = [];
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const channels = {
    async put(channel: { id: string }) {
      puts.push(channel.id);
      await released;
    },
    async remove() {},
  } as unknown as Channels;
  const live = createLiveConfig(config, {
    configPath: path,
    channels,
    pipelines: { put() {}, remove() {} } as unknown as Pipelines,
    pool: { async reconfigure() {} } as unknown as QueryPool,
    routing: { apply() {} } as unknown as LiveRouting,
    pipelineDeps: { history: {} as never, logger: silentLogger },
    addSecrets() {},
    logger: silentLogger,
  });
  const addChannel = () =>
    writeFileSync(
      path,
      `${BASE}channels: [{ id: api, type: openapi }, { id: more, type: openapi, prefix: /v2 }]\n`,
    );
  return { live, puts, release, addChannel };
}

describe('createLiveConfig', () => {
  describe('stop', () => {
    it('lets the reload under way end, and refuses every reload after it with SB_DRAINING', async () => {
      const { live, puts, release, addChannel } = await liveWithSlowChannels();
      addChannel();
      const reloading = live.reload();
      await expect.poll(() => puts).toEqual(['more']);

      live.stop();
      // A reload asked for meanwhile (a SIGHUP, the fleet follower) is refused, not run later.
      const late = live.reload();
      release();
      await expect(reloading).resolves.toEqual({ changed: ['channels.more: added'] });
      await expect(late).rejects.toMatchObject({ code: 'SB_DRAINING' });
      await expect(live.reload()).rejects.toMatchObject({ code: 'SB_DRAINING' });
      expect(puts).toEqual(['more']);
    });
  });
});
