import {
  formatIssues,
  type Pipeline,
  PipelineAnswerSchema,
  type PipelineResult,
  type SecretMasker,
  SwitchboardError,
  answerResult,
  createSecretMasker,
  isSwitchboardError,
  secretField,
  secretValues,
} from '@switchboard/core';
import { z } from 'zod';
import { type AnswerBound, MAX_ANSWER_BYTES } from './answer-size.js';
import { type RemoteAnswer, discard, drainRest, headerOf, postJson, textOf } from './post-json.js';
import { abortError, brokenStream, excerptOf, remoteCall, statusError } from './remote-errors.js';
import { SIGNATURE_HEADER, signBody } from './signature.js';
import { type StreamFormat, streamFormatOf } from './stream-events.js';
import { readStreamedReply } from './streamed-reply.js';
import { turnBody } from './turn-body.js';

/** `pipelines[]` keys of `type: http`: where to POST turns and how to sign them. */
export const HttpPipelineOptionsSchema = z.strictObject({
  type: z.literal('http'),
  /** The endpoint that answers `{replies:[{text}]}`; http or https only. */
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  /** When set, every request carries `X-Switchboard-Signature` (see signature.ts). */
  secret: secretField(z.string().min(1)).optional(),
  /** Extra request headers, e.g. an `Authorization` the endpoint expects; their values are secrets. */
  headers: secretField(z.record(z.string(), z.string())).optional(),
});
export type HttpPipelineOptions = z.output<typeof HttpPipelineOptionsSchema>;

export interface HttpPipelineDeps {
  /** Largest answer kept, plain or streamed (bytes; default `MAX_ANSWER_BYTES`, 16 MiB); lower in tests. */
  maxAnswerBytes?: number;
}

/**
 * A pipeline that POSTs each turn as JSON to `options.url` and sends back the `replies` the
 * endpoint answers with, or streams (NDJSON or SSE, see streamed-reply.ts). Signed with `options.secret` when set. Failures: 408/429/5xx and
 * network errors are retryable (honouring Retry-After), other statuses and malformed answers are
 * fatal, and so is an answer past `maxAnswerBytes`; an aborted run is SB_PIPELINE_TIMEOUT.
 */
export function createHttpPipeline(
  id: string,
  options: HttpPipelineOptions,
  deps: HttpPipelineDeps = {},
): Pipeline {
  // Values that must never reach an error or a log, even when the endpoint echoes them.
  const mask = createSecretMasker(secretValues(HttpPipelineOptionsSchema, options));
  const bound: AnswerBound = { pipeline: id, maxBytes: deps.maxAnswerBytes ?? MAX_ANSWER_BYTES };
  return {
    id,
    async run(query, { signal, logger, traceHeaders, stream }) {
      const body = JSON.stringify(turnBody(query));
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': 'switchboard',
        ...traceHeaders,
        ...options.headers,
      };
      if (options.secret !== undefined) headers[SIGNATURE_HEADER] = signBody(options.secret, body);

      const startedMs = Date.now();
      const response = await remoteCall(id, signal, () =>
        postJson(id, options.url, { headers, body, signal }),
      );
      const ok = response.status >= 200 && response.status < 300;
      const format = streamFormatOf(headerOf(response.headers, 'content-type'));
      if (ok && format !== undefined) {
        const result = await readStream(response.body, format, stream, signal);
        logger.debug(
          { pipeline: id, status: response.status, format, durationMs: Date.now() - startedMs },
          'pipeline answered',
        );
        return result;
      }
      const text = await remoteCall(id, signal, () => textOf(bound, response.body));
      logger.debug(
        { pipeline: id, status: response.status, durationMs: Date.now() - startedMs },
        'pipeline answered',
      );

      if (!ok) throw statusError(id, response.status, response.headers, excerptOf(text, mask));
      return parseReply(id, response.status, text, mask);
    },
  };

  /** A streamed answer (docs/design.md §4 "Streaming"); a body cut under way is a broken stream. */
  async function readStream(
    responseBody: RemoteAnswer['body'],
    format: StreamFormat,
    onDelta: ((delta: string) => void) | undefined,
    signal: AbortSignal,
  ): Promise<PipelineResult> {
    let whole = false;
    try {
      // Not destroyed when the read leaves at the replies: the rest is drained below.
      const body = responseBody.iterator({ destroyOnReturn: false });
      const result = await readStreamedReply(bound, body, format, onDelta, mask);
      whole = true;
      return result;
    } catch (error) {
      if (isSwitchboardError(error)) throw error;
      if (signal.aborted) throw abortError(id, signal, error);
      const reason = error instanceof Error ? error.message : String(error);
      throw brokenStream(id, excerptOf(reason, mask), error);
    } finally {
      // After the replies the answer is whole: what may follow is read in the background, so the
      // connection serves the next call without the turn waiting for it. After a failure (an
      // answer too large among them): cut, never read to its end.
      if (whole) drainRest(responseBody);
      else discard(responseBody);
    }
  }
}

function parseReply(id: string, status: number, text: string, mask: SecretMasker): PipelineResult {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalidReply(id, status, text, mask, ['response body is not JSON']);
  }
  // What the endpoint must answer with a 2xx: the replies to send (possibly none), and a handoff.
  const parsed = PipelineAnswerSchema.safeParse(json);
  if (!parsed.success) throw invalidReply(id, status, text, mask, formatIssues(parsed.error));
  return answerResult(parsed.data);
}

function invalidReply(
  id: string,
  status: number,
  text: string,
  mask: SecretMasker,
  problems: string[],
): SwitchboardError {
  return new SwitchboardError('SB_PIPELINE_FAILED', {
    message: `pipeline ${id}: invalid reply: ${problems.join('; ')}`,
    details: { pipeline: id, status, problems, body: excerptOf(text, mask) },
  });
}
