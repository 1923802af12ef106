import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type SwitchboardError, isSwitchboardError } from '@switchboard/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentFile, attachmentName } from '../../src/outbound/attachment-file.js';

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

  async function failure(url: string, options: { maxBytes?: number; fetchTimeoutMs?: number } = {}) {
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
        { signal, channelId: 'sl' },
      );
      expect(file.bytes.equals(bytes)).toBe(true);
      expect(file.name).toBe('file.bin');
    });

    it('refuses a file past the cap, for good, without the query in the message', async () => {
      const error = await failure(`${base}/big?sig=secret`, { maxBytes: 63 });
      expect(error.retryable).toBe(false);
      expect(error.message).toBe(`channel "sl": attachment ${base}/big: larger than 63 bytes`);
    });

    it('fails retryably on a 5xx answer or a timeout, for good on a 404', async () => {
      expect((await failure(`${base}/down`)).retryable).toBe(true);
      const timedOut = await failure(`${base}/hang`, { fetchTimeoutMs: 50 });
      expect(timedOut.retryable).toBe(true);
      expect(timedOut.message).toMatch(/timed out$/);
      expect((await failure(`${base}/missing`)).retryable).toBe(false);
    });
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
});
