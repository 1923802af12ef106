import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { get, post, serveYaml, useCleanups } from './serve-process.js';

// Who may call what, against the real `switchboard serve` over loopback sockets: the admin
// token, `admin.protect`, and how forwarding headers change what "loopback" means.

const cleanup = useCleanups();

const serve = (yaml: string, server?: string) =>
  serveYaml(yaml, { cleanup, server, env: { ADMIN_TOKEN: 's3cret' } });

const OPERATIONS = [
  '/metrics',
  '/readyz',
  '/docs',
  '/docs/json',
  '/docs/static/swagger-ui.css',
  '/openapi.json',
];
const BEARER = { authorization: 'Bearer s3cret' };
const FROM_PROXY = { 'x-forwarded-for': '203.0.113.9' };

/**
 * A request over loopback with every header as given, `Host` included (fetch sets its own):
 * what a browser sends once a hostile page drives it. Resolves the status and the error code.
 */
function browserRequest(
  url: string,
  method: string,
  headers: Record<string, string>,
): Promise<{ status: number; code: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.once('end', () => {
        let code: string | undefined;
        try {
          code = JSON.parse(text).error?.code;
        } catch {}
        resolve({ status: res.statusCode ?? 0, code });
      });
    });
    req.once('error', reject);
    req.end();
  });
}

describe('access control (end to end)', () => {
  describe('when admin.protect closes metrics, readyz and docs and an admin token is set', () => {
    it('answers them 401 without the token and serves them with it; /healthz stays open', async () => {
      const gateway = await serve('admin: { token: "${ADMIN_TOKEN}", protect: [metrics, readyz, docs] }\n');
      for (const path of OPERATIONS) {
        const refused = await get(`${gateway.url}${path}`);
        expect({ path, status: refused.status }).toEqual({ path, status: 401 });
        expect(refused.body.error.code).toBe('SB_HTTP_UNAUTHORIZED');
        const served = await get(`${gateway.url}${path}`, BEARER);
        expect({ path, status: served.status }).toEqual({ path, status: 200 });
      }
      expect((await get(`${gateway.url}/healthz`)).status).toBe(200);
    });

    it('checks the admin token before the query or body, so a stranger gets 401, not 400', async () => {
      const gateway = await serve('admin: { token: "${ADMIN_TOKEN}" }\n');
      for (const path of ['/admin/dead-letters?limit=abc', '/admin/audit?since=soon']) {
        expect((await get(`${gateway.url}${path}`)).status).toBe(401);
        expect((await get(`${gateway.url}${path}`, BEARER)).status).toBe(400);
      }
      expect((await post(`${gateway.url}/admin/reload`, '{not json')).status).toBe(401);
    });
  });

  describe('when admin.protect is set without a token', () => {
    it('serves loopback clients, but not a request a proxy on loopback forwarded', async () => {
      const gateway = await serve('admin: { protect: [metrics, readyz, docs] }\n');
      for (const path of [...OPERATIONS, '/admin/queues']) {
        expect({ path, status: (await get(`${gateway.url}${path}`)).status }).toEqual({ path, status: 200 });
        const forwarded = await get(`${gateway.url}${path}`, FROM_PROXY);
        expect({ path, status: forwarded.status }).toEqual({ path, status: 403 });
        expect(forwarded.body.error.message).toContain('admin.token is not set');
      }
    });
  });

  describe('when no keys are set and server.trust_proxy is off', () => {
    it('refuses forwarded requests to the HTTP channel and the admin API', async () => {
      const gateway = await serve('');
      const message = { session_id: 's', user_id: 'u', text: 'hi' };
      expect((await post(`${gateway.url}/v1/messages`, message)).status).toBe(200);
      const forwarded = await post(`${gateway.url}/v1/messages`, message, { forwarded: 'for=203.0.113.9' });
      expect(forwarded.status).toBe(403);
      expect(forwarded.body?.error.message).toContain('api_keys is not set');
      expect((await get(`${gateway.url}/admin/queues`, { 'x-real-ip': '203.0.113.9' })).status).toBe(403);
    });
  });

  // Security regression: with trust_proxy the client named in X-Forwarded-For was judged, and a
  // client writes that header itself, so `X-Forwarded-For: 127.0.0.1` opened the admin API.
  describe('when server.trust_proxy trusts every peer', () => {
    it('refuses a forwarded request even when X-Forwarded-For names 127.0.0.1', async () => {
      const gateway = await serve('', 'host: 127.0.0.1, port: 0, trust_proxy: true');
      const message = { session_id: 's', user_id: 'u', text: 'hi' };
      const claimed = { 'x-forwarded-for': '127.0.0.1' };
      expect((await get(`${gateway.url}/admin/queues`, FROM_PROXY)).status).toBe(403);
      expect((await get(`${gateway.url}/admin/queues`, claimed)).status).toBe(403);
      const channel = await post(`${gateway.url}/v1/messages`, message, claimed);
      expect(channel.status).toBe(403);
      expect(channel.body?.error.message).toContain('api_keys is not set');
      expect((await get(`${gateway.url}/admin/queues`)).status).toBe(200);
    });
  });

  // A browser on the machine is a loopback client too: a hostile page can make it post to
  // http://127.0.0.1:PORT (CSRF), or re-resolve its own name to 127.0.0.1 and read the answers
  // (DNS rebinding).
  describe('when no admin token is set and a browser is driven by a hostile page', () => {
    it('refuses requests addressed to another name with 403 SB_HTTP_HOST_NOT_LOOPBACK, admin and console alike', async () => {
      const gateway = await serve('admin: { protect: [metrics] }\n');
      const { host } = new URL(gateway.url);
      for (const path of ['/admin/queues', '/admin/', '/metrics']) {
        const rebound = await browserRequest(`${gateway.url}${path}`, 'GET', {
          host: `rebound.example:${new URL(gateway.url).port}`,
        });
        expect({ path, ...rebound }).toEqual({ path, status: 403, code: 'SB_HTTP_HOST_NOT_LOOPBACK' });
        const direct = await browserRequest(`${gateway.url}${path}`, 'GET', { host });
        expect({ path, status: direct.status }).toEqual({ path, status: 200 });
      }
      const localhost = await browserRequest(`${gateway.url}/admin/queues`, 'GET', {
        host: `localhost:${new URL(gateway.url).port}`,
      });
      expect(localhost.status).toBe(200);
    });

    it('refuses a state-changing admin request from another origin with 403 SB_HTTP_CROSS_SITE', async () => {
      const gateway = await serve('');
      const { host, origin } = new URL(gateway.url);
      const reload = `${gateway.url}/admin/reload`;
      const crossSite: Array<Record<string, string>> = [
        { host, origin: 'https://evil.example' },
        { host, origin: 'null' },
        { host, 'sec-fetch-site': 'cross-site' },
      ];
      for (const headers of crossSite) {
        const refused = await browserRequest(reload, 'POST', headers);
        expect({ headers, ...refused }).toEqual({ headers, status: 403, code: 'SB_HTTP_CROSS_SITE' });
      }
      const deleted = await browserRequest(`${gateway.url}/admin/dead-letters/01JNONE`, 'DELETE', {
        host,
        origin: 'https://evil.example',
      });
      expect(deleted).toEqual({ status: 403, code: 'SB_HTTP_CROSS_SITE' });
      // The console's own requests, and clients that are no browser, still pass.
      const sameOrigin = { host, origin, 'sec-fetch-site': 'same-origin' };
      expect((await browserRequest(reload, 'POST', sameOrigin)).status).toBe(200);
      expect((await browserRequest(reload, 'POST', { host })).status).toBe(200);
    });
  });

  describe('when an admin token is set', () => {
    it('judges neither Host nor Origin: a page cannot make the browser send the token', async () => {
      const gateway = await serve('admin: { token: "${ADMIN_TOKEN}" }\n');
      const answer = await browserRequest(`${gateway.url}/admin/reload`, 'POST', {
        ...BEARER,
        host: 'rebound.example',
        origin: 'https://evil.example',
      });
      expect(answer.status).toBe(200);
    });
  });
});
