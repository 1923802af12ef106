import {
  type HistoryEntry,
  type HistoryStore,
  type Pipeline,
  type Query,
  SwitchboardError,
  createSecretMasker,
  formatIssues,
  secretField,
  secretValues,
} from '@switchboard/core';
import { z } from 'zod';
import { type AnswerBound, MAX_ANSWER_BYTES, streamedTextBudget } from './answer-size.js';
import { type RemoteAnswer, discard, drainRest, postJson, textOf } from './post-json.js';
import {
  abortError,
  brokenStream,
  excerptOf,
  isRetryableStatus,
  remoteCall,
  statusError,
} from './remote-errors.js';
import { streamEvents } from './stream-events.js';

/** `pipelines[]` keys of `type: openai`: any OpenAI-compatible chat-completions endpoint. */
export const OpenAIPipelineOptionsSchema = z.strictObject({
  type: z.literal('openai'),
  /** API root; the client appends `/chat/completions`. */
  base_url: z.url().default('https://api.openai.com/v1'),
  api_key: secretField(z.string().min(1)),
  model: z.string().min(1),
  /** Sent as `OpenAI-Organization`: the organization a key of several bills to. */
  organization: z.string().min(1).optional(),
  /** Sent as `OpenAI-Project`: the project a key of several works in. */
  project: z.string().min(1).optional(),
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
  /**
   * Sends the turn's images as `image_url` parts of the user message, by their `media_url`
   * (docs/design.md §2 "Media"), for models that see images. The endpoint fetches them itself, so
   * it must reach the gateway (`server.public_url`). The history keeps the text alone: links expire.
   */
  vision: z.boolean().default(false),
});
export type OpenAIPipelineOptions = z.output<typeof OpenAIPipelineOptionsSchema>;

export interface OpenAIPipelineDeps {
  /** Where the per-session conversation is kept (the gateway's store). */
  history: HistoryStore;
  /** Largest answer kept, plain or streamed (bytes; default `MAX_ANSWER_BYTES`, 16 MiB); lower in tests. */
  maxAnswerBytes?: number;
}

/** The part of a chat completion this pipeline reads: the first choice's text. */
const CompletionSchema = z.object({
  choices: z.array(
    z.object({
      message: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }).nullish(),
    }),
  ),
});

/** The part of a streamed chunk this pipeline reads; an `error` chunk ends the stream unfinished. */
const ChunkSchema = z.object({
  choices: z
    .array(
      z.object({
        delta: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .optional(),
  error: z.object({ message: z.string().optional() }).optional(),
});

/** A part of a user message that shows an image (OpenAI's `image_url` content part). */
type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/** What a message of the conversation sent to the model looks like. */
type ChatMessage =
  | { role: 'system'; content: string }
  | HistoryEntry
  | { role: 'user'; content: ContentPart[] };

/**
 * A pipeline that asks an OpenAI-compatible chat-completions endpoint: the system prompt, the
 * session's last `history_turns` exchanges, then the turn's text; the first choice is the reply.
 * The exchange is appended to the history after a successful answer (`saved`: the session's next
 * turn waits for it). The call is a plain JSON POST (post-json.ts; the protocol is small, and the
 * SDK's per-call cost was a fifth of the gateway's CPU per message). Failures map like the `http` pipeline's, plus 409 (OpenAI's lock
 * timeout) as retryable; the API key never appears in an error.
 */
export function createOpenAIPipeline(
  id: string,
  options: OpenAIPipelineOptions,
  { history, maxAnswerBytes = MAX_ANSWER_BYTES }: OpenAIPipelineDeps,
): Pipeline {
  const bound: AnswerBound = { pipeline: id, maxBytes: maxAnswerBytes };
  const url = `${options.base_url.replace(/\/+$/, '')}/chat/completions`;
  const mask = createSecretMasker(secretValues(OpenAIPipelineOptionsSchema, options));
  const historyLimit = options.history_turns * 2;
  const fixedHeaders: Record<string, string> = {
    'content-type': 'application/json',
    accept: options.stream ? 'text/event-stream' : 'application/json',
    'user-agent': 'switchboard',
    ...(options.organization === undefined ? {} : { 'openai-organization': options.organization }),
    ...(options.project === undefined ? {} : { 'openai-project': options.project }),
    authorization: `Bearer ${options.api_key}`,
  };

  return {
    id,
    async run(query, { signal, logger, traceHeaders, stream }) {
      const past = historyLimit > 0 ? await history.recent(query.session, id, historyLimit) : [];
      const said = saidIn(query);
      const messages: ChatMessage[] = [
        ...(options.system_prompt === undefined
          ? []
          : [{ role: 'system' as const, content: options.system_prompt }]),
        ...past,
        ...(options.vision ? withImages(said, query) : said),
      ];

      const startedMs = Date.now();
      const body = JSON.stringify({
        model: options.model,
        messages,
        temperature: options.temperature,
        ...(options.stream ? { stream: true } : {}),
      });
      // The trace context may not replace what the endpoint needs.
      const headers = traceHeaders === undefined ? fixedHeaders : { ...traceHeaders, ...fixedHeaders };
      const response = await remoteCall(id, signal, () => postJson(id, url, { headers, body, signal }));
      const text =
        response.status >= 200 && response.status < 300
          ? options.stream
            ? await streamedAnswer(response.body, signal, stream)
            : completeAnswer(await bodyText(response, signal))
          : failed(response.status, response.headers, await bodyText(response, signal));
      logger.debug(
        { pipeline: id, model: options.model, durationMs: Date.now() - startedMs },
        'pipeline answered',
      );

      if (historyLimit === 0) return { replies: [{ text }] };
      // Not waited for here: handed to the controller, it joins the commit storing the reply.
      const saved = history
        .append(query.session, id, [...said, { role: 'assistant', content: text }])
        .catch((err: unknown) => {
          // The user already has an answer; failing the turn would re-ask the model and reply twice.
          logger.warn({ err, pipeline: id }, 'history append failed');
        });
      return { replies: [{ text }], saved };
    },
  };

  /** The whole body; a connection cut while reading it never got an answer. */
  function bodyText(response: RemoteAnswer, signal: AbortSignal): Promise<string> {
    return remoteCall(id, signal, () => textOf(bound, response.body));
  }

  /** A non-2xx answer: retryable as the status says, and 409 (OpenAI's lock timeout). */
  function failed(status: number, headers: RemoteAnswer['headers'], text: string): never {
    throw statusError(
      id,
      status,
      headers,
      excerptOf(text, mask),
      status === 409 || isRetryableStatus(status),
    );
  }

  /** The first choice's text of a plain answer; a refusal is still an answer the user should see. */
  function completeAnswer(text: string): string {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw invalidReply(['response body is not JSON'], text);
    }
    const parsed = CompletionSchema.safeParse(json);
    if (!parsed.success) throw invalidReply(formatIssues(parsed.error), text);
    const message = parsed.data.choices[0]?.message;
    const answer = message?.content ?? message?.refusal;
    // No text at all is a broken endpoint.
    if (typeof answer !== 'string') throw invalidReply(['choices[0].message.content: missing'], text);
    return answer;
  }

  function invalidReply(problems: string[], text: string): SwitchboardError {
    return new SwitchboardError('SB_PIPELINE_FAILED', {
      message: `pipeline ${id}: invalid reply: ${problems.join('; ')}`,
      details: { pipeline: id, problems, body: excerptOf(text, mask) },
    });
  }

  /**
   * The first choice's text of a streamed answer (server-sent events of chunks, then `[DONE]`),
   * each piece passed to `onDelta` as it arrives. A stream that breaks, sends an error, or ends
   * before a chunk with `finish_reason` fails retryably: the answer is incomplete, and asking
   * again may get it whole. Text past `maxAnswerBytes` fails for good (SB_PIPELINE_ANSWER_TOO_LARGE)
   * and cuts the stream.
   */
  async function streamedAnswer(
    body: RemoteAnswer['body'],
    signal: AbortSignal,
    onDelta: ((delta: string) => void) | undefined,
  ): Promise<string> {
    let text = '';
    let finished = false;
    let done = false;
    const keep = streamedTextBudget(bound);
    try {
      // Not destroyed when the loop leaves at [DONE]: the rest is drained below.
      for await (const event of streamEvents(body.iterator({ destroyOnReturn: false }), 'sse', bound)) {
        if (event.text.startsWith('[DONE]')) {
          done = true;
          break;
        }
        const chunk = chunkOf(event.text);
        const choice = chunk.choices?.[0];
        const delta = choice?.delta?.content ?? choice?.delta?.refusal;
        if (typeof delta === 'string' && delta !== '') {
          keep(delta);
          text += delta;
          onDelta?.(delta);
        }
        if (choice?.finish_reason) finished = true;
      }
    } catch (error) {
      if (signal.aborted) throw abortError(id, signal, error);
      if (error instanceof SwitchboardError) throw error;
      throw brokenStream(id, excerptOf(error instanceof Error ? error.message : String(error), mask), error);
    } finally {
      // After [DONE] the answer is whole: the rest (the body's end, usually at once) is read in
      // the background so the connection serves the next call, and the turn does not wait for it.
      // After a failure: cut.
      if (done) drainRest(body);
      else discard(body);
    }
    if (!finished) throw brokenStream(id, 'the stream ended before a chunk with finish_reason');
    return text;
  }

  function chunkOf(text: string): z.output<typeof ChunkSchema> {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw brokenStream(id, `a chunk is not JSON: ${excerptOf(text, mask)}`);
    }
    const parsed = ChunkSchema.safeParse(json);
    if (!parsed.success) throw brokenStream(id, `invalid chunk: ${formatIssues(parsed.error).join('; ')}`);
    if (parsed.data.error !== undefined) {
      throw brokenStream(
        id,
        `the endpoint sent an error: ${excerptOf(parsed.data.error.message ?? text, mask)}`,
      );
    }
    return parsed.data;
  }
}

/**
 * `said` with the turn's images (their media URLs; none marked too large) added to the last user
 * message as `image_url` parts, or in a user message of their own when the turn ends with the
 * operator's words.
 */
function withImages(said: HistoryEntry[], query: Query): ChatMessage[] {
  const images: ContentPart[] = query.messages
    .flatMap((message) => message.elements)
    .flatMap((element) =>
      element.type === 'image' && element.media_url !== undefined && element.too_large !== true
        ? [{ type: 'image_url' as const, image_url: { url: element.media_url } }]
        : [],
    );
  if (images.length === 0) return said;
  const last = said.at(-1);
  if (last?.role !== 'user') return [...said, { role: 'user', content: images }];
  const text: ContentPart[] = last.content === '' ? [] : [{ type: 'text', text: last.content }];
  return [...said.slice(0, -1), { role: 'user', content: [...text, ...images] }];
}

/**
 * What the turn adds to the conversation: the user's text — or, for a turn resuming a handoff,
 * everything said during it, the operator's replies as the assistant's, so that the model (and the
 * history) knows what the operator told the user.
 */
function saidIn(query: Query): HistoryEntry[] {
  const resumed = query.messages.find((message) => message.handoff !== undefined);
  if (resumed?.handoff === undefined) return [{ role: 'user', content: query.text }];
  const transcript = resumed.handoff.transcript.map(
    (entry): HistoryEntry => ({ role: entry.from === 'user' ? 'user' : 'assistant', content: entry.text }),
  );
  const after = query.messages.slice(query.messages.indexOf(resumed) + 1);
  return [...transcript, ...after.map((message): HistoryEntry => ({ role: 'user', content: message.text }))];
}
