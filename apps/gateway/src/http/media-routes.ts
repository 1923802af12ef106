import { Transform, pipeline } from 'node:stream';
import { type Logger, type MediaDownload, SwitchboardError, isSwitchboardError } from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { MediaLinks } from '../media-links.js';

export interface MediaRouteDeps {
  links: MediaLinks;
  logger: Logger;
  /** `server.max_media_downloads`: files streamed at once. */
  maxDownloads: number;
}

const TokenParamsSchema = z.strictObject({ token: z.string().min(1) });

/** `attachment; filename="…"; filename*=UTF-8''…`: an ASCII fallback, and the name itself. */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/**
 * Passes bytes on until more than `maxBytes` went through; then fails, which cuts the stream.
 * Each piece passed on calls `onBytes`.
 */
function byteLimit(maxBytes: number, onBytes: () => void): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      onBytes();
      seen += chunk.length;
      if (seen > maxBytes)
        done(
          new SwitchboardError('SB_MEDIA_TOO_LARGE', {
            message: `the file is larger than ${maxBytes} bytes`,
          }),
        );
      else done(null, chunk);
    },
  });
}

/**
 * `GET /v1/media/{token}` (docs/design.md §2 "Media"): the file a media link names, streamed from
 * its platform through its channel's `openMedia`. The token is the only credential: signed per
 * channel and expiring, so the route needs no API key and no store. The platform's answer must
 * start within `media.timeout`, and a download that then passes on no byte for as long is cut; a file the platform says (or the link says) is larger than
 * `media.max_bytes` is refused with 413, and one that turns out larger is cut at that many bytes.
 * Nothing is buffered: the platform download is paced by the client and stops when it leaves.
 */
export function registerMediaRoutes(server: FastifyInstance, deps: MediaRouteDeps): void {
  const logger = deps.logger.child({ component: 'media' });
  let downloads = 0;
  server.get(
    '/v1/media/:token',
    {
      schema: {
        summary: 'Download a file of a message',
        description:
          'The `media_url` of an image, voice, audio, video or file element: signed, expiring, scoped to its channel.',
        params: TokenParamsSchema,
        tags: ['media'],
      },
    },
    async (request, reply) => {
      const { token } = request.params as z.output<typeof TokenParamsSchema>;
      const { claims, openMedia, options } = deps.links.open(token);
      const tooLarge = (size: number) =>
        new SwitchboardError('SB_MEDIA_TOO_LARGE', {
          message: `the file has ${size} bytes, more than the ${options.maxBytes} channel "${claims.channel}" serves`,
          details: { channel: claims.channel, size, max_bytes: options.maxBytes },
        });
      if (claims.media.size !== undefined && claims.media.size > options.maxBytes)
        throw tooLarge(claims.media.size);
      if (downloads >= deps.maxDownloads)
        throw new SwitchboardError('SB_MEDIA_BUSY', {
          message: `the gateway streams ${deps.maxDownloads} files already (server.max_media_downloads)`,
          retryAfterMs: 1_000,
        });
      // Counted from here until the open fails or the pipe ends, whichever way: exactly once.
      downloads += 1;
      let counted = true;
      const release = () => {
        if (counted) downloads -= 1;
        counted = false;
      };

      const download = new AbortController();
      const timedOut = new SwitchboardError('SB_MEDIA_TIMEOUT', {
        message: `channel "${claims.channel}" did not start the file within ${options.timeoutMs} ms`,
        details: { channel: claims.channel },
      });
      const timer = setTimeout(() => download.abort(timedOut), options.timeoutMs);
      // The response, not the request: a request emits `close` once its (empty) body is read.
      const onClientGone = () => {
        if (!reply.raw.writableFinished) download.abort(new Error('the client went away'));
      };
      reply.raw.on('close', onClientGone);
      let opened: MediaDownload;
      try {
        opened = await openMedia(claims.media, download.signal);
      } catch (err) {
        release();
        if (download.signal.reason === timedOut) throw timedOut;
        if (isSwitchboardError(err) && err.code.startsWith('SB_MEDIA_')) throw err;
        throw new SwitchboardError('SB_MEDIA_UNAVAILABLE', {
          message: `channel "${claims.channel}" could not open the file`,
          details: { channel: claims.channel },
          cause: err,
        });
      } finally {
        clearTimeout(timer);
      }
      if (opened.size !== undefined && opened.size > options.maxBytes) {
        release();
        opened.body.destroy();
        throw tooLarge(opened.size);
      }

      // A platform that stops sending, or a client that stops reading (the pipe then stops too),
      // would hold the download open for good: past `media.timeout` without a byte it is cut.
      const stalled = setTimeout(
        () =>
          opened.body.destroy(
            new SwitchboardError('SB_MEDIA_TIMEOUT', {
              message: `channel "${claims.channel}" sent no byte of the file for ${options.timeoutMs} ms`,
              details: { channel: claims.channel },
            }),
          ),
        options.timeoutMs,
      );
      const limited = byteLimit(options.maxBytes, () => stalled.refresh());
      pipeline(opened.body, limited, (err) => {
        release();
        clearTimeout(stalled);
        reply.raw.off('close', onClientGone);
        if (err === undefined || err === null) return;
        // Headers are sent by now: the client sees the body cut short, which is all it can be told.
        if (isSwitchboardError(err, 'SB_MEDIA_TOO_LARGE'))
          logger.warn({ channel: claims.channel, maxBytes: options.maxBytes }, 'media cut at max_bytes');
        else if (isSwitchboardError(err, 'SB_MEDIA_TIMEOUT'))
          logger.warn({ channel: claims.channel, timeoutMs: options.timeoutMs }, 'media download stalled');
        else if (!download.signal.aborted)
          logger.warn({ err, channel: claims.channel }, 'media download broke');
      });
      reply
        .header('content-type', claims.media.mime_type ?? opened.mimeType ?? 'application/octet-stream')
        .header('content-disposition', contentDisposition(claims.media.name ?? `${claims.media.type}`))
        .header('x-content-type-options', 'nosniff')
        // The type and name are the sender's: a file must never run as a page of the gateway's
        // origin (the console's), even where a browser ignores `attachment`.
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cache-control', 'private, no-store');
      if (opened.size !== undefined) reply.header('content-length', String(opened.size));
      return reply.send(limited);
    },
  );
}
