import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Config, loadConfig } from '@switchboard/config';
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

/** A live config of `config` from the file at `path`, with `channels` and nothing else to change. */
function liveConfigOf(config: Config, path: string, channels: Channels) {
  return createLiveConfig(config, {
    configPath: path,
    channels,
    pipelines: { put() {}, remove() {} } as unknown as Pipelines,
    pool: { async reconfigure() {} } as unknown as QueryPool,
    routing: { apply() {} } as unknown as LiveRouting,
    pipelineDeps: { history: {} as never, logger: silentLogger },
    addSecrets() {},
    logger: silentLogger,
  });
}

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
    adapters: new Map(),
    async put(channel: { id: string }) {
      puts.push(channel.id);
      await released;
    },
    async remove() {},
  } as unknown as Channels;
  const live = liveConfigOf(config, path, channels);
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

  describe('when reloads are asked for while one runs', () => {
    it('runs one more for all of them, which reads the file after the last ask', async () => {
      const { live, puts, release, addChannel } = await liveWithSlowChannels();
      addChannel();
      const first = live.reload();
      await expect.poll(() => puts).toEqual(['more']);
      const second = live.reload();
      const third = live.reload();
      expect(third).toBe(second);
      release();
      await expect(first).resolves.toEqual({ changed: ['channels.more: added'] });
      await expect(second).resolves.toEqual({ changed: [] });
      expect(puts).toEqual(['more']);
    });
  });

  describe('when a reload renames a single-owner channel', () => {
    it('removes it before adding any channel, and removes the others after', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'live-config-'));
      dirs.push(dir);
      const path = join(dir, 'switchboard.yaml');
      const telegram = (id: string) => `{ id: ${id}, type: telegram, token: "123456789:live-config-token" }`;
      writeFileSync(path, `${BASE}channels: [{ id: api, type: openapi }, ${telegram('tg')}]\n`);
      const config = await loadConfig(path);
      const steps: string[] = [];
      const channels = {
        adapters: new Map([
          ['api', { singleConsumer: false }],
          ['tg', { singleConsumer: true }],
        ]),
        async put(channel: { id: string }) {
          steps.push(`put ${channel.id}`);
        },
        async remove(id: string) {
          steps.push(`remove ${id}`);
        },
      } as unknown as Channels;
      const live = liveConfigOf(config, path, channels);

      writeFileSync(
        path,
        `${BASE}channels: [{ id: api2, type: openapi, prefix: /v2 }, ${telegram('renamed')}]\n`,
      );
      await live.reload();
      expect(steps).toEqual(['remove tg', 'put api2', 'put renamed', 'remove api']);
    });
  });

  describe('when a channel of the reload fails to start', () => {
    it('puts the rest in force, answers the failure, and the next reload compares with what runs', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'live-config-'));
      dirs.push(dir);
      const path = join(dir, 'switchboard.yaml');
      writeFileSync(path, `${BASE}channels: [{ id: api, type: openapi }]\n`);
      const config = await loadConfig(path);
      const running = new Map(config.channels.map((channel) => [channel.id, channel]));
      const steps: string[] = [];
      const refusal = new Error('the platform refused the token');
      const channels = {
        adapters: new Map(),
        async put(channel: Config['channels'][number]) {
          steps.push(`put ${channel.id}`);
          if (channel.id === 'bad') throw refusal;
          running.set(channel.id, channel);
        },
        async remove(id: string) {
          steps.push(`remove ${id}`);
          running.delete(id);
        },
        configs: () => [...running.values()],
      } as unknown as Channels;
      const removedPipelines: string[] = [];
      const live = createLiveConfig(config, {
        configPath: path,
        channels,
        pipelines: {
          put() {},
          remove(id: string) {
            removedPipelines.push(id);
          },
        } as unknown as Pipelines,
        pool: { async reconfigure() {} } as unknown as QueryPool,
        routing: { apply() {} } as unknown as LiveRouting,
        pipelineDeps: { history: {} as never, logger: silentLogger },
        addSecrets() {},
        logger: silentLogger,
      });

      writeFileSync(
        path,
        'server: { host: 127.0.0.1, port: 0 }\npipelines: [{ id: other, type: echo }]\nrouting: { default: other }\n' +
          'channels: [{ id: bad, type: openapi, prefix: /v2 }, { id: good, type: openapi, prefix: /v3 }]\n',
      );
      await expect(live.reload()).rejects.toBe(refusal);
      expect(steps).toEqual(['put bad', 'put good', 'remove api']);
      expect(removedPipelines).toEqual(['echo']);
      expect(live.current().channels.map((channel) => channel.id)).toEqual(['good']);
      expect(live.current().routing.default).toBe('other');

      steps.length = 0;
      await expect(live.reload()).rejects.toBe(refusal);
      expect(steps).toEqual(['put bad']);
    });
  });

  describe('when only handoff settings change', () => {
    it('names them, and the configuration in force has them at once', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'live-config-'));
      dirs.push(dir);
      const path = join(dir, 'switchboard.yaml');
      writeFileSync(path, BASE);
      const channels = { adapters: new Map(), async put() {}, async remove() {} } as unknown as Channels;
      const live = liveConfigOf(await loadConfig(path), path, channels);
      writeFileSync(path, `${BASE}handoff: { idle_timeout: 5m, idle_resume: skip }\n`);
      await expect(live.reload()).resolves.toEqual({
        changed: ['handoff.idleResume', 'handoff.idleTimeoutMs'],
      });
      expect(live.current().handoff).toMatchObject({ idleTimeoutMs: 300_000, idleResume: 'skip' });
    });
  });
});
