import Fastify, { type FastifyServerOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { bearerAuth, credentialIdOf, httpErrorHandler, isLoopbackAddress } from '../src/index.js';

describe('isLoopbackAddress', () => {
  describe('when the address is on loopback', () => {
    it.each(['127.0.0.1', '127.255.0.9', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::FFFF:127.1.2.3'])(
      'accepts %s',
      (address) => {
        expect(isLoopbackAddress(address)).toBe(true);
      },
    );
  });

  describe('when the address is elsewhere or not an address', () => {
    it.each(['128.0.0.1', '10.0.0.1', '::2', 'fe80::1', '::ffff:10.0.0.1', '', 'localhost', '/tmp/sock'])(
      'refuses %s',
      (address) => {
        expect(isLoopbackAddress(address)).toBe(false);
      },
    );

    it('refuses an unknown address', () => {
      expect(isLoopbackAddress(undefined)).toBe(false);
    });
  });

  describe('when addresses alternate and repeat', () => {
    it('judges each one by itself, not by the answer remembered for the last', () => {
      const addresses = ['127.0.0.1', '127.0.0.1', '10.0.0.1', '10.0.0.1', '127.0.0.1', '::1', 'fe80::1'];
      expect(addresses.map(isLoopbackAddress)).toEqual([true, true, false, false, true, true, false]);
    });
  });
});

describe('bearerAuth', () => {
  async function protectedServer(tokens: string[], options: FastifyServerOptions = {}) {
    const server = Fastify(options);
    server.setErrorHandler(httpErrorHandler);
    server.addHook('onRequest', bearerAuth({ tokens, realm: 'admin', setting: 'admin.token' }));
    server.get('/admin/queues', async () => ({ ok: true }));
    await server.ready();
    return server;
  }

  describe('when tokens are configured', () => {
    it('accepts any configured token, with the scheme in any case', async () => {
      const server = await protectedServer(['first-token', 'second-token']);
      for (const authorization of ['Bearer first-token', 'bearer second-token']) {
        const response = await server.inject({
          url: '/admin/queues',
          headers: { authorization },
          remoteAddress: '10.1.1.1',
        });
        expect(response.statusCode).toBe(200);
      }
    });

    it('refuses other schemes, prefixes of a token and empty tokens with 401 naming the realm', async () => {
      const server = await protectedServer(['first-token']);
      for (const authorization of ['Basic Zmlyc3QtdG9rZW4=', 'Bearer first', 'Bearer ', 'first-token']) {
        const response = await server.inject({ url: '/admin/queues', headers: { authorization } });
        expect(response.statusCode).toBe(401);
        expect(response.headers['www-authenticate']).toBe('Bearer realm="admin", error="invalid_token"');
      }
    });
  });

  describe('when only empty tokens are configured', () => {
    it('treats them as none: loopback only', async () => {
      const server = await protectedServer(['']);
      expect(
        (await server.inject({ url: '/admin/queues', headers: { authorization: 'Bearer ' } })).statusCode,
      ).toBe(200);
      const remote = await server.inject({ url: '/admin/queues', remoteAddress: '192.0.2.1' });
      expect(remote.statusCode).toBe(403);
      expect(remote.json().error.message).toBe(
        'admin.token is not set, so only loopback clients not forwarded by a proxy are allowed; set admin.token',
      );
    });
  });

  describe('when no tokens are configured and the proxy is not trusted (trustProxy off)', () => {
    it.each([
      ['x-forwarded-for', '203.0.113.9'],
      ['x-forwarded-for', '127.0.0.1'],
      ['forwarded', 'for=203.0.113.9'],
      ['x-real-ip', '203.0.113.9'],
      ['x-forwarded-proto', 'https'],
      ['via', '1.1 proxy'],
    ])('refuses a loopback peer that forwards with %s: %s', async (name, value) => {
      const server = await protectedServer([]);
      const response = await server.inject({
        url: '/admin/queues',
        headers: { [name]: value },
        remoteAddress: '127.0.0.1',
      });
      expect(response.statusCode).toBe(403);
      expect(response.json().error.code).toBe('SB_HTTP_FORBIDDEN');
    });

    it('serves a loopback peer that forwards nothing', async () => {
      const server = await protectedServer([]);
      const response = await server.inject({ url: '/admin/queues', remoteAddress: '127.0.0.1' });
      expect(response.statusCode).toBe(200);
    });
  });

  // Security regression: fastify's trustProxy takes the leftmost X-Forwarded-For address, which
  // the client writes, so a remote client naming 127.0.0.1 there was admitted as loopback.
  describe('when no tokens are configured and every proxy is trusted (trustProxy true)', () => {
    const ask = async (headers: Record<string, string>, remoteAddress = '127.0.0.1') => {
      const server = await protectedServer([], { trustProxy: true });
      return (await server.inject({ url: '/admin/queues', headers, remoteAddress })).statusCode;
    };

    it('refuses a remote client that names 127.0.0.1 in X-Forwarded-For', async () => {
      expect(await ask({ 'x-forwarded-for': '127.0.0.1' }, '203.0.113.9')).toBe(403);
      expect(await ask({ 'x-forwarded-for': '::1' }, '203.0.113.9')).toBe(403);
    });

    it('refuses every request a proxy on loopback forwarded, whatever client it names', async () => {
      expect(await ask({ 'x-forwarded-for': '203.0.113.9' })).toBe(403);
      expect(await ask({ 'x-forwarded-for': '127.0.0.1' })).toBe(403);
      expect(await ask({ 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'https', via: '1.1 p' })).toBe(
        403,
      );
      expect(await ask({ 'x-forwarded-proto': 'https' })).toBe(403);
    });

    it('still serves a loopback peer that forwards nothing', async () => {
      expect(await ask({})).toBe(200);
    });
  });

  describe('when no tokens are configured and a network of proxies is trusted (trustProxy CIDR)', () => {
    it('refuses a client on that network that names 127.0.0.1 in X-Forwarded-For itself', async () => {
      const server = await protectedServer([], { trustProxy: ['172.16.0.0/12'] });
      const response = await server.inject({
        url: '/admin/queues',
        headers: { 'x-forwarded-for': '127.0.0.1' },
        remoteAddress: '172.18.0.5',
      });
      expect(response.statusCode).toBe(403);
      expect(response.json().error.code).toBe('SB_HTTP_FORBIDDEN');
    });
  });

  describe('when no tokens are configured and the loopback proxy is trusted (trustProxy addresses)', () => {
    it('refuses its forwarded requests but reports the client it names as request.ip', async () => {
      const server = Fastify({ trustProxy: ['127.0.0.1'] });
      server.setErrorHandler(httpErrorHandler);
      let seenIp: string | undefined;
      server.addHook('onRequest', (request, _reply, done) => {
        seenIp = request.ip;
        done();
      });
      server.addHook('onRequest', bearerAuth({ tokens: [], realm: 'admin', setting: 'admin.token' }));
      server.get('/admin/queues', async () => ({ ok: true }));
      const response = await server.inject({
        url: '/admin/queues',
        headers: { 'x-forwarded-for': '127.0.0.1' },
        remoteAddress: '127.0.0.1',
      });
      expect(response.statusCode).toBe(403);
      expect(seenIp).toBe('127.0.0.1');
      const remote = await server.inject({
        url: '/admin/queues',
        headers: { 'x-forwarded-for': '203.0.113.9' },
        remoteAddress: '127.0.0.1',
      });
      expect(remote.statusCode).toBe(403);
      expect(seenIp).toBe('203.0.113.9');
    });
  });

  describe('when a client connects over a loopback socket', () => {
    it('serves it, and refuses the same socket once it carries X-Forwarded-For', async () => {
      const server = await protectedServer([]);
      const address = await server.listen({ host: '127.0.0.1', port: 0 });
      try {
        expect((await fetch(`${address}/admin/queues`)).status).toBe(200);
        const forwarded = await fetch(`${address}/admin/queues`, {
          headers: { 'x-forwarded-for': '203.0.113.9' },
        });
        expect(forwarded.status).toBe(403);
      } finally {
        await server.close();
      }
    });
  });
});

describe('credentialIdOf', () => {
  function serverWith(tokens: string[]) {
    const server = Fastify();
    server.addHook('onRequest', bearerAuth({ tokens, realm: 'switchboard', setting: 'api_keys' }));
    server.setErrorHandler(httpErrorHandler);
    server.get('/whoami', async (request) => ({ credential: credentialIdOf(request, tokens) }));
    return server;
  }
  const whoami = async (server: ReturnType<typeof serverWith>, key?: string) =>
    (
      await server.inject({
        url: '/whoami',
        ...(key === undefined ? {} : { headers: { authorization: `Bearer ${key}` } }),
      })
    ).json().credential;

  describe('when API keys are configured', () => {
    it('names each key by a stable id of its own that does not contain the key', async () => {
      const server = serverWith(['key-alpha-secret', 'key-beta-secret']);
      const alpha = await whoami(server, 'key-alpha-secret');
      const beta = await whoami(server, 'key-beta-secret');
      expect(alpha).toMatch(/^key:[0-9a-f]{16}$/);
      expect(beta).toMatch(/^key:[0-9a-f]{16}$/);
      expect(alpha).not.toBe(beta);
      expect(alpha).not.toContain('alpha');
      // The same on another server (another replica, a restart).
      expect(await whoami(serverWith(['key-alpha-secret']), 'key-alpha-secret')).toBe(alpha);
    });
  });

  describe('when no API keys are configured', () => {
    it('names every loopback caller `loopback`', async () => {
      expect(await whoami(serverWith([]))).toBe('loopback');
      expect(await whoami(serverWith(['']))).toBe('loopback');
    });
  });
});
