import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type SwitchboardError, isSwitchboardError } from '@switchboard/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentFile, attachmentName } from '../../src/outbound/attachment-file.js';
import { isPublicAddress } from '../../src/outbound/public-address.js';

const bytes = Buffer.from([0, 1, 2, 3, 250, 251, 252, 253, 254, 255]);

describe('attachmentFile', () => {
  let server: Server;
  let base: string;
  const signal = new AbortController().signal;

  beforeAll(async () => {
    server = createServer((request, response) => {
      if (request.url?.startsWith('/file.bin')) return response.end(bytes);
      // Chunked, with no content-length: the cap must hold while reading.
      if (request.url?.startsWith('/big')) {
        response.write(Buffer.alloc(32));
        return response.end(Buffer.alloc(32));
      }
      if (request.url === '/down') return response.writeHead(503).end();
      if (request.url === '/busy') return response.writeHead(429).end();
      if (request.url === '/moved') return response.writeHead(302, { location: '/file.bin' }).end();
      if (request.url === '/loop') return response.writeHead(302, { location: '/loop' }).end();
      if (request.url === '/to-file')
        return response.writeHead(302, { location: 'file:///etc/passwd' }).end();
      if (request.url === '/hang') return;
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  // The fake file server is on loopback, which only this allowance reaches.
  const loopback = { allowPrivateUrls: true };

  async function failure(
    url: string,
    options: { maxBytes?: number; fetchTimeoutMs?: number; allowPrivateUrls?: boolean } = loopback,
  ) {
    const error = await attachmentFile({ type: 'file', url }, { signal, channelId: 'sl', ...options }).catch(
      (caught: unknown) => caught,
    );
    expect(isSwitchboardError(error, 'SB_CHANNEL_ATTACHMENT_FETCH_FAILED')).toBe(true);
    return error as SwitchboardError;
  }

  describe('when the attachment holds data', () => {
    it('decodes it, with a name made of its type and mime type', async () => {
      const file = await attachmentFile(
        { type: 'image', data: bytes.toString('base64'), mime_type: 'image/png' },
        { signal, channelId: 'sl' },
      );
      expect(file.bytes.equals(bytes)).toBe(true);
      expect(file).toMatchObject({ name: 'image.png', mimeType: 'image/png' });
    });
  });

  describe('when it is a url', () => {
    it('fetches its bytes, named after the path', async () => {
      const file = await attachmentFile(
        { type: 'file', url: `${base}/file.bin?sig=secret` },
        { signal, channelId: 'sl', ...loopback },
      );
      expect(file.bytes.equals(bytes)).toBe(true);
      expect(file.name).toBe('file.bin');
    });

    it('follows a redirect, up to three, and only to http or https', async () => {
      const file = await attachmentFile(
        { type: 'file', url: `${base}/moved` },
        { signal, channelId: 'sl', ...loopback },
      );
      expect(file.bytes.equals(bytes)).toBe(true);
      expect((await failure(`${base}/loop`)).message).toMatch(/too many redirects$/);
      expect((await failure(`${base}/to-file`)).message).toMatch(/file: is not http or https$/);
    });

    it('refuses a file past the cap, for good, without the query in the message', async () => {
      const error = await failure(`${base}/big?sig=secret`, { maxBytes: 63, ...loopback });
      expect(error.retryable).toBe(false);
      expect(error.message).toBe(`channel "sl": attachment ${base}/big: larger than 63 bytes`);
    });

    it('fails retryably on a 5xx or 429 answer or a timeout, for good on a 404', async () => {
      expect((await failure(`${base}/down`)).retryable).toBe(true);
      expect((await failure(`${base}/busy`)).retryable).toBe(true);
      const timedOut = await failure(`${base}/hang`, { fetchTimeoutMs: 50, ...loopback });
      expect(timedOut.retryable).toBe(true);
      expect(timedOut.message).toMatch(/timed out$/);
      expect((await failure(`${base}/missing`)).retryable).toBe(false);
    });
  });

  describe('when the url leads to a non-public address and private urls are not allowed', () => {
    it('refuses a loopback, link-local or private address for good, without a request', async () => {
      let requests = 0;
      server.once('request', () => {
        requests += 1;
      });
      for (const url of [
        `${base}/file.bin`,
        'http://169.254.169.254/latest/meta-data/',
        'http://[::ffff:127.0.0.1]/x',
        'http://10.1.2.3/x',
      ]) {
        const error = await failure(url, {});
        expect(error.retryable).toBe(false);
        expect(error.message).toMatch(/the host is not a public address$/);
      }
      expect(requests).toBe(0);
    });

    it('refuses a name that resolves to loopback', async () => {
      const port = (server.address() as AddressInfo).port;
      const error = await failure(`http://localhost:${port}/file.bin`, {});
      expect(error.message).toMatch(/the host is not a public address$/);
    });
  });
});

describe('isPublicAddress', () => {
  it('tells public addresses from loopback, private, link-local and mapped ones', () => {
    expect(isPublicAddress('93.184.215.14')).toBe(true);
    expect(isPublicAddress('2606:4700::1111')).toBe(true);
    for (const address of [
      '127.0.0.1',
      '169.254.169.254',
      '172.20.0.1',
      '192.168.1.1',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:169.254.169.254',
      'not an address',
    ])
      expect(isPublicAddress(address), address).toBe(false);
  });
});

describe('attachmentName', () => {
  it('prefers the given name, then the url path, then the type', () => {
    expect(attachmentName({ type: 'file', url: 'https://x.test/a/report%201.pdf', name: 'r.pdf' })).toBe(
      'r.pdf',
    );
    expect(attachmentName({ type: 'file', url: 'https://x.test/a/report%201.pdf' })).toBe('report 1.pdf');
    expect(attachmentName({ type: 'audio', url: 'https://x.test/' })).toBe('audio');
  });

  it('keeps a url segment that is not valid percent-encoding as it is, instead of throwing', () => {
    // decodeURIComponent throws on it: an uncoded error would be retried until max_age.
    expect(attachmentName({ type: 'file', url: 'https://x.test/a/100%25%E0%A4%A.pdf' })).toBe(
      '100%25%E0%A4%A.pdf',
    );
    expect(attachmentName({ type: 'file', url: 'https://x.test/a/50%off.pdf' })).toBe('50%off.pdf');
  });
});
