import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { bearerAuth, httpErrorHandler, isLoopbackAddress } from '../src/index.js';

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
  async function protectedServer(tokens: string[]) {
    const server = Fastify();
    server.setErrorHandler(httpErrorHandler);
    server.addHook('onRequest', bearerAuth({ tokens, realm: 'admin' }));
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
      expect(remote.json().error.message).toContain('only loopback clients');
    });
  });
});
