import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { httpErrorHandler, isLoopbackHost, requestForgeryRefusal } from '../src/index.js';

describe('isLoopbackHost', () => {
  describe('when the Host names loopback', () => {
    it.each([
      '127.0.0.1',
      '127.0.0.1:8080',
      '127.9.8.7:1',
      'localhost',
      'LocalHost:3000',
      '[::1]',
      '[::1]:8080',
      'localhost.:8080',
      '127.0.0.1.',
      'console.localhost:3000',
      '[::ffff:127.0.0.1]:8080',
    ])('accepts %s', (host) => {
      expect(isLoopbackHost(host)).toBe(true);
    });
  });

  describe('when the Host names anything else', () => {
    it.each([
      'evil.example',
      'evil.example:8080',
      '127.0.0.1.nip.io',
      'localhost.evil.example',
      'evil-localhost',
      '[::ffff:10.0.0.1]',
      '10.0.0.1',
      '[::2]:80',
      'evil.example@127.0.0.1',
      '127.0.0.1:99999',
      '',
    ])('refuses %s', (host) => {
      expect(isLoopbackHost(host)).toBe(false);
    });

    it('refuses a missing Host', () => {
      expect(isLoopbackHost(undefined)).toBe(false);
    });
  });
});

describe('requestForgeryRefusal', () => {
  async function guardedServer() {
    const server = Fastify();
    server.setErrorHandler(httpErrorHandler);
    server.addHook('onRequest', (request, _reply, done) => done(requestForgeryRefusal(request)));
    server.get('/admin/queues', async () => ({ ok: true }));
    server.post('/admin/reload', async () => ({ ok: true }));
    server.delete('/admin/dead-letters/:id', async () => ({ ok: true }));
    await server.ready();
    return server;
  }

  describe('when the Host is not a loopback name (DNS rebinding)', () => {
    it('refuses reads and writes with 403 SB_HTTP_HOST_NOT_LOOPBACK naming the host', async () => {
      const server = await guardedServer();
      for (const method of ['GET', 'POST'] as const) {
        const url = method === 'GET' ? '/admin/queues' : '/admin/reload';
        const response = await server.inject({ method, url, headers: { host: 'rebound.example:8080' } });
        expect(response.statusCode).toBe(403);
        expect(response.json().error).toMatchObject({
          code: 'SB_HTTP_HOST_NOT_LOOPBACK',
          details: { host: 'rebound.example:8080' },
        });
      }
    });
  });

  describe('when a state-changing request comes from another origin (CSRF)', () => {
    it.each([
      ['POST', '/admin/reload', { origin: 'https://evil.example' }],
      ['POST', '/admin/reload', { origin: 'http://127.0.0.1:9999' }],
      ['POST', '/admin/reload', { origin: 'http://localhost:8080' }],
      ['POST', '/admin/reload', { origin: 'null' }],
      ['DELETE', '/admin/dead-letters/x', { origin: 'https://evil.example' }],
      ['POST', '/admin/reload', { 'sec-fetch-site': 'cross-site' }],
      ['DELETE', '/admin/dead-letters/x', { 'sec-fetch-site': 'cross-site' }],
    ] as const)('refuses %s %s with %o: 403 SB_HTTP_CROSS_SITE', async (method, url, headers) => {
      const server = await guardedServer();
      const response = await server.inject({ method, url, headers: { host: '127.0.0.1:8080', ...headers } });
      expect(response.statusCode).toBe(403);
      expect(response.json().error.code).toBe('SB_HTTP_CROSS_SITE');
    });
  });

  describe('when the request is the page of the same origin, or no browser at all', () => {
    it.each([
      ['POST', { host: '127.0.0.1:8080', origin: 'http://127.0.0.1:8080', 'sec-fetch-site': 'same-origin' }],
      ['POST', { host: 'localhost', origin: 'http://localhost:80' }],
      ['POST', { host: '[::1]:8080', origin: 'http://[::1]:8080' }],
      ['POST', { host: '127.0.0.1:8080' }],
      ['GET', { host: '127.0.0.1:8080', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }],
    ] as const)('serves %s with %o', async (method, headers) => {
      const server = await guardedServer();
      const url = method === 'GET' ? '/admin/queues' : '/admin/reload';
      const response = await server.inject({ method, url, headers });
      expect(response.statusCode).toBe(200);
    });
  });
});
