import { ChannelIdSchema, OutboundSchema, bearerCredential } from '@switchboard/channel-kit/options';
import { durationMs, numeric, secretField } from '@switchboard/core';
import { z } from 'zod';

// The `./options` entry of the package: the schema of a `type: openapi` entry of `channels[]`.
// It must not import fastify nor the channel, so that loading the configuration loads neither.

/** `channels[]` with `type: openapi`. */
export const OpenApiChannelSchema = z
  .strictObject({
    id: ChannelIdSchema,
    type: z.literal('openapi'),
    prefix: z
      .string()
      .regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'must be a path like /v1, without a trailing slash')
      .default('/v1'),
    /** Requests in flight before 429. */
    max_concurrent_requests: numeric(z.number().int().min(1)).prefault(100),
    /** Bearer keys; empty strings are dropped so `${API_KEY:-}` means none (loopback only). */
    api_keys: secretField(z.array(bearerCredential())).default([]),
    /** How long `POST …/messages` with `wait: true` waits for the replies before answering 202. */
    wait_timeout: durationMs({ max: '10m' }).prefault('30s'),
    /** The most a request may ask for with `timeout_ms`. */
    max_wait_timeout: durationMs({ max: '10m' }).prefault('2m'),
    outbound: OutboundSchema.prefault({}),
    /** Event streams (`GET …/sessions/{id}/events`) open at once on the channel, before 429. */
    max_event_streams: numeric(z.number().int().min(1)).prefault(1000),
    /** Event streams open at once on one session, before 429. */
    max_event_streams_per_session: numeric(z.number().int().min(1)).prefault(10),
    /** Bytes an event stream may have unsent (a client that does not read) before it is disconnected. */
    max_event_stream_buffer: numeric(z.number().int().min(1)).prefault(1_048_576),
    /**
     * Bytes all event streams of the channel may have unsent together; past it the streams
     * holding most are disconnected. Without it the worst case was `max_event_streams` times
     * `max_event_stream_buffer` (1 GiB with the defaults).
     */
    max_event_stream_buffer_total: numeric(z.number().int().min(1)).prefault(67_108_864),
  })
  .superRefine((channel, ctx) => {
    if (channel.max_wait_timeout < channel.wait_timeout) {
      ctx.addIssue({
        code: 'custom',
        path: ['max_wait_timeout'],
        message: 'must not be shorter than wait_timeout',
      });
    }
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    prefix: channel.prefix,
    maxConcurrentRequests: channel.max_concurrent_requests,
    apiKeys: channel.api_keys.filter((key) => key !== ''),
    waitTimeoutMs: channel.wait_timeout,
    maxWaitTimeoutMs: channel.max_wait_timeout,
    outbound: channel.outbound,
    maxEventStreams: channel.max_event_streams,
    maxEventStreamsPerSession: channel.max_event_streams_per_session,
    maxEventStreamBufferBytes: channel.max_event_stream_buffer,
    maxEventStreamBufferTotalBytes: channel.max_event_stream_buffer_total,
  }));

/** A parsed `type: openapi` channel: what `createOpenApiChannel` takes as `config`. */
export type OpenApiChannelConfig = z.output<typeof OpenApiChannelSchema>;
