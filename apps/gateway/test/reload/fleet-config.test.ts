import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Config, type LoadedFile, loadConfig } from '@switchboard/config';
import { silentLogger } from '@switchboard/core';
import type { ConfigReport, FleetConfig } from '@switchboard/store-redis';
import { afterEach, describe, expect, it } from 'vitest';
import { type FleetConfigStore, configDigest, followFleetConfig } from '../../src/reload/fleet-config.js';
import type { LiveConfig } from '../../src/reload/live-config.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The fleet's side as the Redis pool keeps it, in memory; `failPublishes` refuses that many. */
function fleetStore(): FleetConfigStore & {
  fleet: FleetConfig | null;
  reports: ConfigReport[];
  failPublishes: number;
} {
  const store = {
    fleet: null as FleetConfig | null,
    reports: [] as ConfigReport[],
    failPublishes: 0,
    async publishConfig(digest: string) {
      if (store.failPublishes > 0) {
        store.failPublishes -= 1;
        throw new Error('redis away');
      }
      store.fleet = { version: (store.fleet?.version ?? 0) + 1, digest };
      return store.fleet.version;
    },
    async fleetConfig() {
      return store.fleet;
    },
    async reportConfig(report: ConfigReport) {
      store.reports.push(report);
    },
  };
  return store;
}

/** A follower of `path` that made its first check; its timer stopped, so the test drives the checks. */
async function startedFollower(
  store: FleetConfigStore,
  live: LiveConfig,
  path: string,
  load?: (path: string) => Promise<LoadedFile>,
) {
  const follower = followFleetConfig({
    store,
    live,
    configPath: path,
    everyMs: 60_000,
    logger: silentLogger,
    ...(load === undefined ? {} : { load }),
  });
  await follower.start();
  follower.stop();
  return follower;
}

describe('configDigest', () => {
  it('changes when only a tenant changes (its routing, or one of its files), so the fleet adopts it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleet-config-'));
    dirs.push(dir);
    const path = join(dir, 'switchboard.yaml');
    writeFileSync(path, `tenants_dir: ${join(dir, 'tenants')}\n`);
    mkdirSync(join(dir, 'tenants'));
    const tenant = (fallback: string) =>
      writeFileSync(
        join(dir, 'tenants', 'acme.yaml'),
        `id: acme\npipelines: [ { id: a, type: echo }, { id: b, type: echo } ]\nrouting: { default: ${fallback} }\n`,
      );
    tenant('a');
    const before = configDigest(await loadConfig(path));
    tenant('b');
    expect(configDigest(await loadConfig(path))).not.toBe(before);
  });
});

describe('followFleetConfig', () => {
  describe('when publishing a reload fails', () => {
    it('answers nothing wrong to the reload, and publishes at the next check', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'fleet-config-'));
      dirs.push(dir);
      const path = join(dir, 'switchboard.yaml');
      writeFileSync(path, 'concurrency: { pipeline: 2 }\n');
      let current: Config = await loadConfig(path);
      const live = { current: () => current } as unknown as LiveConfig;
      const store = fleetStore();
      const follower = await startedFollower(store, live, path);
      expect(store.fleet).toEqual({ version: 1, digest: configDigest(current) });

      writeFileSync(path, 'concurrency: { pipeline: 3 }\n');
      current = await loadConfig(path);
      store.failPublishes = 1;
      await expect(follower.published()).resolves.toBeUndefined();
      expect(store.fleet?.version).toBe(1);

      await follower.check();
      expect(store.fleet).toEqual({ version: 2, digest: configDigest(current) });
      expect(store.reports.at(-1)).toMatchObject({ version: 2, state: 'current' });
      // Published once: a further check changes nothing.
      await follower.check();
      expect(store.fleet?.version).toBe(2);
    });
  });

  describe('when a renewal finds the limits changed but no version was published (the replica that stored them died first)', () => {
    it('reads its file again, reloads it, and publishes it as the next version', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'fleet-config-'));
      dirs.push(dir);
      const path = join(dir, 'switchboard.yaml');
      writeFileSync(path, 'concurrency: { pipeline: 2 }\n');
      let current: Config = await loadConfig(path);
      let reloads = 0;
      const live = {
        current: () => current,
        async reload() {
          reloads += 1;
          current = await loadConfig(path);
          return { changed: ['concurrency.global'] };
        },
      } as unknown as LiveConfig;
      const store = fleetStore();
      const follower = await startedFollower(store, live, path);

      // The fleet's version is unchanged: a check alone sees nothing to do.
      writeFileSync(path, 'concurrency: { pipeline: 3 }\n');
      await follower.check();
      expect(reloads).toBe(0);

      await follower.reconcile();
      expect(reloads).toBe(1);
      expect(store.fleet).toEqual({ version: 2, digest: configDigest(current) });
      expect(current.concurrency.global).toBe(3);
    });
  });
});

describe('followFleetConfig on a replica whose file differs from the fleet’s', () => {
  it('reads its file and tenant files again only when one of them changed, or a tenant file came', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleet-config-'));
    dirs.push(dir);
    const path = join(dir, 'switchboard.yaml');
    const tenants = join(dir, 'tenants');
    mkdirSync(tenants);
    writeFileSync(path, `tenants_dir: ${tenants}\n`);
    const tenant = (id: string, fallback = 'a') =>
      writeFileSync(
        join(tenants, `${id}.yaml`),
        `id: ${id}\npipelines: [ { id: ${id}-a, type: echo }, { id: ${id}-b, type: echo } ]\nrouting: { default: ${id}-${fallback} }\n`,
      );
    // Files as a deployment leaves them: modified a while ago (a file modified within the last
    // two seconds is read again at every check, as it may change again unseen by its stats).
    const settle = () => {
      const past = new Date(Date.now() - 10_000);
      for (const file of [path, tenants, ...readdirSync(tenants).map((name) => join(tenants, name))])
        utimesSync(file, past, past);
    };
    tenant('acme');
    tenant('beta');
    settle();
    const current: Config = await loadConfig(path);
    const live = { current: () => current } as unknown as LiveConfig;
    const store = fleetStore();
    store.fleet = { version: 7, digest: 'another file' };
    let reads = 0;
    const follower = await startedFollower(store, live, path, (file) => {
      reads += 1;
      return loadConfig(file);
    });
    // The first read learns which paths the file goes through, the second finds them unmoved.
    await follower.check();
    expect(reads).toBe(2);
    for (let check = 0; check < 5; check += 1) await follower.check();
    expect(reads).toBe(2);
    expect(store.reports.at(-1)?.state).toBe('differs');

    tenant('beta', 'b');
    await follower.check();
    expect(reads).toBe(3);
    settle();
    await follower.check();
    expect(reads).toBe(4);
    await follower.check();
    expect(reads).toBe(4);

    // Rewritten at the same size and given its old modification time back (as `cp -p` does):
    // its change time still tells.
    const beta = join(tenants, 'beta.yaml');
    const { mtime } = statSync(beta);
    tenant('beta', 'a');
    utimesSync(beta, mtime, mtime);
    await follower.check();
    expect(reads).toBe(5);

    tenant('gamma');
    await follower.check();
    expect(reads).toBe(6);
    store.fleet = { version: 8, digest: configDigest(await loadConfig(path)) };
    let reloads = 0;
    (live as unknown as { reload: () => Promise<unknown> }).reload = async () => {
      reloads += 1;
      return { changed: [] };
    };
    await follower.check();
    expect(reloads).toBe(1);
  });
});
