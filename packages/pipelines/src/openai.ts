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
import type { ChatCompletion, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { abortError, excerptOf, isRetryableStatus, networkError, statusError } from './remote-errors.js';

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
    async run(query, { signal, logger, traceHeaders }) {
      const past = historyLimit > 0 ? await history.recent(query.session, id, historyLimit) : [];
      const messages: ChatCompletionMessageParam[] = [
        ...(options.system_prompt === undefined
          ? []
          : [{ role: 'system' as const, content: options.system_prompt }]),
        ...past,
        { role: 'user', content: query.text },
      ];

      const { sdk, client } = await connect();
      const startedMs = Date.now();
      let completion: ChatCompletion;
      try {
        completion = await client.chat.completions.create(
          { model: options.model, messages, temperature: options.temperature },
          { signal, headers: { ...traceHeaders } },
        );
      } catch (error) {
        throw toPipelineError(id, mask, signal, error, sdk);
      }
      logger.debug(
        { pipeline: id, model: options.model, durationMs: Date.now() - startedMs },
        'pipeline answered',
      );

      const message = completion.choices[0]?.message;
      // A refusal is still an answer the user should see; no text at all is a broken endpoint.
      const text = message?.content ?? message?.refusal;
      if (typeof text !== 'string') {
        throw new SwitchboardError('SB_PIPELINE_FAILED', {
          message: `pipeline ${id}: invalid reply: choices[0].message.content is missing`,
          details: { pipeline: id, problems: ['choices[0].message.content: missing'] },
        });
      }

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
