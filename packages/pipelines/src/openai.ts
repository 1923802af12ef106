import {
  type HistoryStore,
  type Pipeline,
  type SecretMasker,
  SwitchboardError,
  createSecretMasker,
  secretField,
  secretValues,
} from '@switchboard/core';
import type OpenAI from 'openai';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { z } from 'zod';
import {
  abortError,
  brokenStream,
  excerptOf,
  isRetryableStatus,
  networkError,
  statusError,
} from './remote-errors.js';

/** `pipelines[]` keys of `type: openai`: any OpenAI-compatible chat-completions endpoint. */
export const OpenAIPipelineOptionsSchema = z.strictObject({
  type: z.literal('openai'),
  /** API root; the client appends `/chat/completions`. */
  base_url: z.url().default('https://api.openai.com/v1'),
  api_key: secretField(z.string().min(1)),
  model: z.string().min(1),
  /** Sent first, as the `system` message, on every turn. */
  system_prompt: z.string().optional(),
  /** Past exchanges (user + assistant) sent as context; 0 keeps no history. */
  history_turns: z.number().int().min(0).max(100).default(10),
  temperature: z.number().min(0).max(2).optional(),
  /**
   * Asks for the answer as a stream (`stream: true`) and passes its pieces on to channels that
   * show answers as they are written (docs/design.md §4 "Streaming"); the reply is the whole text.
   */
  stream: z.boolean().default(false),
});
export type OpenAIPipelineOptions = z.output<typeof OpenAIPipelineOptionsSchema>;

export interface OpenAIPipelineDeps {
  /** Where the per-session conversation is kept (the gateway's store). */
  history: HistoryStore;
}

/**
 * A pipeline that asks an OpenAI-compatible chat-completions endpoint: the system prompt, the
 * session's last `history_turns` exchanges, then the turn's text; the first choice is the reply.
 * The exchange is appended to the history after a successful answer. Failures map like the
 * `http` pipeline's, plus 409 (OpenAI's lock timeout) as retryable; the API key never appears
 * in an error.
 */
export function createOpenAIPipeline(
  id: string,
  options: OpenAIPipelineOptions,
  { history }: OpenAIPipelineDeps,
): Pipeline {
  // The SDK is loaded by the first turn, not by every process that reads a config naming it.
  let loaded: Promise<{ sdk: typeof OpenAI; client: OpenAI }> | undefined;
  const connect = () =>
    (loaded ??= import('openai').then(({ default: sdk }) => ({
      sdk,
      // Retries belong to the controller (backoff, attempts, dead letters), never to the client.
      client: new sdk({ baseURL: options.base_url, apiKey: options.api_key, maxRetries: 0 }),
    })));
  const mask = createSecretMasker(secretValues(OpenAIPipelineOptionsSchema, options));
  const historyLimit = options.history_turns * 2;

  return {
    id,
    async run(query, { signal, logger, traceHeaders, stream }) {
      const past = historyLimit > 0 ? await history.recent(query.session, id, historyLimit) : [];
      const messages: ChatCompletionMessageParam[] = [
        ...(options.system_prompt === undefined
          ? []
          : [{ role: 'system' as const, content: options.system_prompt }]),
        ...past,
        { role: 'user', content: query.text },
      ];

      const openai = await connect();
      const startedMs = Date.now();
      const request: ChatCompletionCreateParamsNonStreaming = {
        model: options.model,
        messages,
        temperature: options.temperature,
      };
      const requestOptions = { signal, headers: { ...traceHeaders } };
      const text = options.stream
        ? await streamedAnswer(openai, request, requestOptions, stream)
        : await completeAnswer(openai, request, requestOptions);
      logger.debug(
        { pipeline: id, model: options.model, durationMs: Date.now() - startedMs },
        'pipeline answered',
      );

      if (historyLimit > 0) {
        try {
          await history.append(query.session, id, [
            { role: 'user', content: query.text },
            { role: 'assistant', content: text },
          ]);
        } catch (err) {
          // The user already has an answer; failing the turn would re-ask the model and reply twice.
          logger.warn({ err, pipeline: id }, 'history append failed');
        }
      }
      return { replies: [{ text }] };
    },
  };

  /** The first choice's text of a plain answer; a refusal is still an answer the user should see. */
  async function completeAnswer(
    { sdk, client }: { sdk: typeof OpenAI; client: OpenAI },
    request: ChatCompletionCreateParamsNonStreaming,
    requestOptions: OpenAI.RequestOptions & { signal: AbortSignal },
  ): Promise<string> {
    let text: string | null | undefined;
    try {
      const completion = await client.chat.completions.create(request, requestOptions);
      const message = completion.choices[0]?.message;
      text = message?.content ?? message?.refusal;
    } catch (error) {
      throw toPipelineError(id, mask, requestOptions.signal, error, sdk);
    }
    // No text at all is a broken endpoint.
    if (typeof text !== 'string') {
      throw new SwitchboardError('SB_PIPELINE_FAILED', {
        message: `pipeline ${id}: invalid reply: choices[0].message.content is missing`,
        details: { pipeline: id, problems: ['choices[0].message.content: missing'] },
      });
    }
    return text;
  }

  /**
   * The first choice's text of a streamed answer, each piece passed to `onDelta` as it arrives. A
   * stream that breaks, or ends before a chunk with `finish_reason`, fails retryably: the answer
   * is incomplete, and asking again may get it whole.
   */
  async function streamedAnswer(
    { sdk, client }: { sdk: typeof OpenAI; client: OpenAI },
    request: ChatCompletionCreateParamsNonStreaming,
    requestOptions: OpenAI.RequestOptions & { signal: AbortSignal },
    onDelta: ((delta: string) => void) | undefined,
  ): Promise<string> {
    const { signal } = requestOptions;
    let text = '';
    let finished = false;
    let answering = false;
    try {
      const chunks = await client.chat.completions.create({ ...request, stream: true }, requestOptions);
      answering = true;
      for await (const chunk of chunks) {
        const choice = chunk.choices[0];
        const delta = choice?.delta?.content ?? choice?.delta?.refusal;
        if (typeof delta === 'string' && delta !== '') {
          text += delta;
          onDelta?.(delta);
        }
        if (choice?.finish_reason) finished = true;
      }
    } catch (error) {
      // An error event in the stream is an APIError with a status; the client reports a connection
      // cut under way as a connection error, which is a broken stream, not an unreachable endpoint.
      const statusError = error instanceof sdk.APIError && error.status !== undefined;
      if (signal.aborted || !answering || statusError) throw toPipelineError(id, mask, signal, error, sdk);
      throw brokenStream(id, excerptOf(error instanceof Error ? error.message : String(error), mask), error);
    }
    if (!finished) throw brokenStream(id, 'the stream ended before a chunk with finish_reason');
    return text;
  }
}

function toPipelineError(
  id: string,
  mask: SecretMasker,
  signal: AbortSignal,
  error: unknown,
  sdk: typeof OpenAI,
): SwitchboardError {
  if (signal.aborted) return abortError(id, signal, error);
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return new SwitchboardError('SB_PIPELINE_TIMEOUT', {
      message: `pipeline ${id}: the client timed out`,
      details: { pipeline: id },
      retryable: true,
    });
  }
  if (error instanceof sdk.APIConnectionError) return networkError(id, error.cause ?? error);
  if (error instanceof sdk.APIError && error.status !== undefined) {
    // The cause is left out: an APIError's message and body may quote the key (e.g. "Incorrect API key").
    return statusError(
      id,
      error.status,
      error.headers ?? new Headers(),
      excerptOf(error.message, mask),
      error.status === 409 || isRetryableStatus(error.status),
    );
  }
  return new SwitchboardError('SB_PIPELINE_FAILED', {
    message: `pipeline ${id}: ${excerptOf(error instanceof Error ? error.message : String(error), mask)}`,
    details: { pipeline: id },
  });
}
