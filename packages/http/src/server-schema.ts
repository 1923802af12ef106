import { durationMs, numeric, secretField } from '@switchboard/core';
import { z } from 'zod';
import { isTrustedProxyEntry } from './trusted-proxy.js';

// The `./server-schema` entry of the package: the `server` section of switchboard.yaml, which
// configures the one server the HTTP channel, the admin API and the console share. It must not
// import fastify, so that loading the configuration does not load the server.

/** `server`: where the gateway listens and the limits of its HTTP server. */
export const ServerSchema = z
  .strictObject({
    host: z.string().min(1).default('0.0.0.0'),
    /** 0 picks a free port (tests). */
    port: numeric(z.number().int().min(0).max(65_535)).prefault(8080),
    /** Largest accepted request body, in bytes. */
    body_limit: numeric(z.number().int().min(1)).prefault(1_048_576),
    /**
     * Which peers may name the client in `X-Forwarded-For` (docs/design.md §7): `false` none, `true`
     * every peer, or a list of addresses, CIDR ranges and `loopback` / `linklocal` /
     * `uniquelocal`. Only the logged client address follows it; a request carrying forwarding
     * headers is never loopback, whatever this says.
     */
    trust_proxy: z
      .union([
        z.boolean(),
        z
          .array(
            z.string().refine(isTrustedProxyEntry, {
              error:
                'expected an IP address, a CIDR range like 10.0.0.0/8, loopback, linklocal or uniquelocal',
            }),
          )
          .min(1, 'list at least one proxy, or write false'),
      ])
      .default(false),
    /**
     * Longest a client may take to send a request's headers and body; then 408 and the connection
     * is closed. A client trickling a body must not hold a socket (and a shutdown) for ever.
     */
    request_timeout: durationMs()
      .refine((ms) => ms >= 1000, 'must be at least 1s')
      .prefault('30s'),
    /**
     * Connections open at once; past it a new one is closed as soon as it is accepted. Each
     * holds a file descriptor (a slow sender up to `request_timeout`, an idle keep-alive one
     * 72 s), so without a cap clients could exhaust the process's descriptors.
     */
    max_connections: numeric(z.number().int().min(1).max(1_000_000)).prefault(10_000),
    /**
     * The gateway's address as pipelines reach it: the base of `media_url`s (docs/design.md §2
     * "Media"). Default: `http://<host>:<port>` of this section (the bound port when 0).
     */
    public_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
    /**
     * Signs the media links of every channel (each gets a key of its own derived from it).
     * Default: each channel's key is derived from its own secrets (tokens), so that rotating one
     * ends that channel's outstanding links. Replicas must share it.
     */
    media_secret: secretField(z.string().min(16, 'use at least 16 characters')).optional(),
    /**
     * Files the media route streams at once (docs/design.md §2 "Media"); past it a link answers
     * 503 `SB_MEDIA_BUSY` with `Retry-After`. Each download holds a platform connection and a
     * client one for as long as the client reads.
     */
    max_media_downloads: numeric(z.number().int().min(1).max(100_000)).prefault(64),
  })
  .transform(
    ({
      host,
      port,
      body_limit,
      trust_proxy,
      request_timeout,
      max_connections,
      public_url,
      media_secret,
      max_media_downloads,
    }) => ({
      host,
      port,
      bodyLimitBytes: body_limit,
      trustProxy: trust_proxy,
      requestTimeoutMs: request_timeout,
      maxConnections: max_connections,
      publicUrl: public_url?.replace(/\/+$/, ''),
      mediaSecret: media_secret,
      maxMediaDownloads: max_media_downloads,
    }),
  );

/** The parsed `server` section: durations in ms, keys camelCase. */
export type ServerConfig = z.output<typeof ServerSchema>;
