import { byteSize, durationMs } from '@switchboard/core';
import { z } from 'zod';

/**
 * `channels[].media`: the files a channel's messages carry, served by the gateway's
 * `GET /v1/media/{token}` (docs/design.md §2 "Media").
 */
export const MediaOptionsSchema = z
  .strictObject({
    /** Largest file served; a larger one is marked `too_large` and its link answers 413. */
    max_bytes: byteSize({ min: 1, max: 2_000_000_000 }).prefault('25MB'),
    /** How long a `media_url` works after the turn was handed to its pipeline. */
    url_ttl: durationMs({ min: '1m', max: '168h' }).prefault('1h'),
    /**
     * Longest the platform may take to start sending a file, and then the longest pause between
     * two pieces of it (the client's reading included); not a limit on the whole download.
     */
    timeout: durationMs({ min: '1s', max: '10m' }).prefault('30s'),
  })
  .transform(({ max_bytes, url_ttl, timeout }) => ({
    maxBytes: max_bytes,
    urlTtlMs: url_ttl,
    timeoutMs: timeout,
  }));

/** The parsed `channels[].media`. */
export type MediaOptions = z.output<typeof MediaOptionsSchema>;
