import { createHttpServerShutdown } from '@switchboard/http';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { mountChannelApps } from '../../src/http/channel-apps.js';

describe('channel apps', () => {
  let server: FastifyInstance | undefined;
  /** The channel apps of the last server built. */
  let mounted: ReturnType<typeof mountChannelApps> | undefined;
  afterEach(async () => {
    await server?.close();
  });

  /** A server with one app per prefix, each answering its prefix on every path below it. */
  async function serverWith(prefixes: string[]): Promise<FastifyInstance> {
    const root = Fastify();
    server = root;
    const apps = mountChannelApps(root, {
      build: () => Fastify(),
      shutdown: createHttpServerShutdown(root),
      version: 'test',
    });
    mounted = apps;
    await root.listen({ port: 0, host: '127.0.0.1' });
    for (const prefix of prefixes) {
      const app = await apps.create();
      app.all(`${prefix}/*`, async () => ({ prefix }));
      app.all(prefix, async () => ({ prefix }));
      await apps.mount(prefix, prefix, app);
    }
    return root;
  }

  const served = async (root: FastifyInstance, url: string) => {
    const address = root.server.address() as { port: number };
    const response = await fetch(`http://127.0.0.1:${address.port}${url}`);
    return response.status === 404 ? 404 : ((await response.json()) as { prefix: string }).prefix;
  };

  it('hands a request to the app of the longest prefix it falls under, by whole segments', async () => {
    const root = await serverWith(['/v1', '/v1/b', '/t999']);
    expect(await served(root, '/v1/messages')).toBe('/v1');
    expect(await served(root, '/v1/b/messages?wait=true')).toBe('/v1/b');
    expect(await served(root, '/v1/bb/messages')).toBe('/v1');
    expect(await served(root, '/v1')).toBe('/v1');
    expect(await served(root, '/v1?x=1')).toBe('/v1');
    expect(await served(root, '/t999/messages')).toBe('/t999');
    expect(await served(root, '/v10/messages')).toBe(404);
    expect(await served(root, '/')).toBe(404);
  });

  it('finds the app of a path far longer than any prefix, of thousands of segments, as of a short one', async () => {
    const root = await serverWith(['/v1', '/v1/b']);
    expect(await served(root, `/v1/b/${'x/'.repeat(5000)}messages`)).toBe('/v1/b');
    expect(await served(root, `/v1/${'b/'.repeat(5000)}`)).toBe('/v1/b');
    expect(await served(root, `/${'v1/'.repeat(5000)}`)).toBe('/v1');
    expect(await served(root, `/${'z/'.repeat(5000)}`)).toBe(404);
  });

  it('serves a channel remounted under another prefix there only, and nothing once unmounted', async () => {
    const root = await serverWith([]);
    const apps = mounted as NonNullable<typeof mounted>;
    const appAt = async (prefix: string) => {
      const app = await apps.create();
      app.all(`${prefix}/*`, async () => ({ prefix }));
      return app;
    };
    await apps.mount('c', '/p', await appAt('/p'));
    expect(await served(root, '/p/messages')).toBe('/p');
    await apps.mount('c', '/q', await appAt('/q'));
    expect(await served(root, '/p/messages')).toBe(404);
    expect(await served(root, '/q/messages')).toBe('/q');
    apps.unmount('c');
    expect(await served(root, '/q/messages')).toBe(404);
  });
});
