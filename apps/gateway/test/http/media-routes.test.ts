import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { type MediaClaims, silentLogger } from '@switchboard/core';
import { httpErrorHandler } from '@switchboard/http';
import Fastify, { type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { eventually } from '@switchboard/testkit/eventually';
import { afterEach, describe, expect, it } from 'vitest';
import { registerMediaRoutes } from '../../src/http/media-routes.js';
import type { MediaLinks, OpenableMedia } from '../../src/media-links.js';

const claims: MediaClaims = { channel: 'tg', media: { type: 'file', name: 'a.bin' }, expiresAtMs: 0 };
const options = { maxBytes: 1_000_000, urlTtlMs: 60_000, timeoutMs: 150 };

/** A media route whose links open `body`, then each of `more` in turn. */
async function serve(
  body: PassThrough,
  { maxDownloads = 10, more = [] as PassThrough[] } = {},
): Promise<{ server: FastifyInstance; url: string }> {
  const server = Fastify();
  server.setValidatorCompiler(validatorCompiler);
  server.setSerializerCompiler(serializerCompiler);
  server.setErrorHandler(httpErrorHandler);
  const bodies = [body, ...more];
  const openable: OpenableMedia = {
    claims,
    options,
    openMedia: async () => ({ body: bodies.shift() as PassThrough }),
  };
  const links: MediaLinks = { queryFor: (query) => query, open: () => openable };
  registerMediaRoutes(server, { links, logger: silentLogger, maxDownloads });
  await server.listen({ port: 0, host: '127.0.0.1' });
  return { server, url: `http://127.0.0.1:${(server.server.address() as AddressInfo).port}/v1/media/t.s` };
}

describe('registerMediaRoutes', () => {
  let server: FastifyInstance | undefined;
  afterEach(async () => {
    await server?.close();
  });

  describe('when the platform stops sending midway', () => {
    it('cuts the download after media.timeout without a byte: the platform stream is destroyed, the client sees the end', async () => {
      const body = new PassThrough();
      const served = await serve(body);
      server = served.server;
      const received = await new Promise<{ bytes: number; aborted: boolean }>((resolve, reject) => {
        request(served.url, (response) => {
          let bytes = 0;
          let aborted = false;
          response.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
          });
          response.on('aborted', () => {
            aborted = true;
          });
          response.on('error', () => {});
          response.on('close', () => resolve({ bytes, aborted }));
        })
          .on('error', reject)
          .end();
        body.write(Buffer.alloc(10));
      });
      expect(received).toEqual({ bytes: 10, aborted: true });
      expect(body.destroyed).toBe(true);
    }, 5_000);
  });

  describe('when server.max_media_downloads files are being streamed', () => {
    it('answers 503 SB_MEDIA_BUSY with Retry-After, and serves again once one ends', async () => {
      const first = new PassThrough();
      const second = new PassThrough();
      const served = await serve(first, { maxDownloads: 1, more: [second] });
      server = served.server;
      const firstDone = fetch(served.url).then((response) => response.arrayBuffer());
      first.write(Buffer.alloc(10));
      await eventually(async () => {
        const busy = await fetch(served.url);
        const body = (await busy.json()) as { error: { code: string } };
        return (
          busy.status === 503 &&
          busy.headers.get('retry-after') === '1' &&
          body.error.code === 'SB_MEDIA_BUSY'
        );
      });
      first.end();
      expect((await firstDone).byteLength).toBe(10);
      second.end(Buffer.alloc(3));
      const again = await eventually(async () => {
        const response = await fetch(served.url);
        return response.status === 200 && response;
      });
      expect((await again.arrayBuffer()).byteLength).toBe(3);
    }, 5_000);
  });

  describe('when a file is served', () => {
    it('is sandboxed: no script of it runs as a page of the gateway origin', async () => {
      const served = await serve(new PassThrough().end('<script>alert(1)</script>') as PassThrough);
      server = served.server;
      const response = await fetch(served.url);
      await response.arrayBuffer();
      expect(response.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
      expect(response.headers.get('content-disposition')).toMatch(/^attachment;/);
    }, 5_000);
  });

  describe('when the platform keeps sending, each pause shorter than media.timeout', () => {
    it('serves the whole file', async () => {
      const body = new PassThrough();
      const served = await serve(body);
      server = served.server;
      const writer = setInterval(() => body.write(Buffer.alloc(10)), 50);
      setTimeout(() => {
        clearInterval(writer);
        body.end();
      }, 400);
      const bytes = await new Promise<number>((resolve, reject) => {
        request(served.url, (response) => {
          let total = 0;
          response.on('data', (chunk: Buffer) => {
            total += chunk.length;
          });
          response.on('end', () => resolve(total));
        })
          .on('error', reject)
          .end();
      });
      expect(bytes).toBeGreaterThanOrEqual(60);
      expect(bytes % 10).toBe(0);
    }, 5_000);
  });
});
