import { vi } from 'vitest';
import {
  type Concurrency,
  type ControllerOptions,
  type InboundMessage,
  type Journal,
  type Logger,
  type Outcome,
  type PipelinePolicyInput,
  type PipelineResult,
  PipelinePolicySchema,
  type Query,
  type QueryPool,
  type QueueLimits,
  type QueuedMessage,
  type Reply,
  type ReplyOutbox,
  createController,
  createMemoryQueryPool,
  createMemoryReplyOutbox,
  createOutcomeBus,
  createReplySender,
  parseInboundMessage,
} from '../src/index.js';

let counter = 0;

/** A unified message in chat `chat` of a test channel; the text doubles as its name. */
export function message(
  chat: string,
  text: string,
  overrides: { sender?: string; chatType?: 'person' | 'group' } = {},
): InboundMessage {
  counter += 1;
  return parseInboundMessage({
    id: `m${String(counter).padStart(9, '0')}`,
    platform: 'test',
    channel: 'c',
    chat: { type: overrides.chatType ?? 'person', id: chat },
    sender: { id: overrides.sender ?? `user-${chat}` },
    text,
    platform_message_id: `p${counter}`,
    received_at: Date.now(),
  });
}

/** `message(chat, text)` as the ingress queues it for pipeline `pipeline`. */
export function queuedMessage(
  chat: string,
  text: string,
  extra: { pipeline?: string; sender?: string; chatType?: 'person' | 'group' } = {},
): QueuedMessage {
  const inbound = message(chat, text, extra);
  return {
    message: inbound,
    session: `test:c:${inbound.chat.type}:${chat}`,
    pipeline: extra.pipeline ?? 'p',
    routedByRule: false,
    attempt: 0,
    acceptedAt: Date.now(),
  };
}

export interface PendingRun {
  query: Query;
  signal: AbortSignal;
  /** Answers with `replies` (default: the text), and `saved` as the run's write not waited for. */
  resolve(replies?: Reply[], saved?: Promise<void>): void;
  reject(error: unknown): void;
}

export interface HarnessOptions {
  concurrency?: Partial<Concurrency>;
  limits?: Partial<QueueLimits>;
  pipelines?: PipelinePolicyInput[];
  journal?: Journal;
  /** Answer every run at once with its text instead of waiting for the test. */
  autoReply?: boolean;
  random?: () => number;
  logger?: Logger;
  /** Called for every send after it is logged in `delivered`; may hold or fail it. Default: none. */
  onDeliver?: (origin: InboundMessage, replies: readonly Reply[]) => Promise<void>;
  /** Wraps the pool the controller sees, e.g. to hold its claims. */
  wrapPool?: (pool: QueryPool) => QueryPool;
  /**
   * The pool the controller sees stores an answer in the write that completes its turn, as a
   * shared pool whose outbox is in its store does (`QueryPool.storesReplies`).
   */
  storesReplies?: boolean;
  /** Holds the turns of sessions in handoff (`ControllerOptions.handoffs`). */
  handoffs?: ControllerOptions['handoffs'];
  /** Shows typing while turns run (`ControllerOptions.typing`). */
  typing?: ControllerOptions['typing'];
  /** The query as the pipeline gets it (`ControllerOptions.queryFor`). */
  queryFor?: ControllerOptions['queryFor'];
}

/** A logger that keeps `level message` lines for assertions. */
export function capturingLogger(lines: string[] = []): Logger & { lines: string[] } {
  const log = (level: string) => (_bindings: object, text: string) => void lines.push(`${level} ${text}`);
  const logger: Logger & { lines: string[] } = {
    lines,
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    child: () => logger,
  };
  return logger;
}

/**
 * A pool and controller wired like the gateway does, with pipelines the test drives by hand:
 * each run waits in `runs` until the test resolves or rejects it. `events` logs `start:<text>`
 * and `end:<text>` in order.
 */
export function createHarness(options: HarnessOptions = {}) {
  const policies = (options.pipelines ?? [{ id: 'p' }]).map((input) => PipelinePolicySchema.parse(input));
  const pool = createMemoryQueryPool({
    concurrency: { global: 20, perSession: 1, ...options.concurrency },
    limits: { maxPending: 10_000, maxPendingPerSession: 500, ...options.limits },
    pipelines: policies,
    journal: options.journal,
    logger: options.logger,
  });
  const outcomes: Outcome[] = [];
  const bus = createOutcomeBus((error) => {
    throw error;
  });
  bus.subscribe((outcome) => outcomes.push(outcome));
  const events: string[] = [];
  const runs: PendingRun[] = [];
  const delivered: Array<{ origin: InboundMessage; replies: readonly Reply[] }> = [];
  let active = 0;
  let maxActive = 0;

  const pipelines = new Map(
    policies.map((policy) => [
      policy.id,
      {
        id: policy.id,
        run(query: Query, { signal }: { signal: AbortSignal }) {
          active += 1;
          maxActive = Math.max(maxActive, active);
          events.push(`start:${query.text}`);
          const settle = () => {
            active -= 1;
            events.push(`end:${query.text}`);
          };
          if (options.autoReply) {
            settle();
            return Promise.resolve({ replies: [{ text: query.text }] });
          }
          return new Promise<PipelineResult>((resolve, reject) => {
            runs.push({
              query,
              signal,
              resolve: (replies = [{ text: query.text }], saved) => {
                settle();
                resolve(saved === undefined ? { replies } : { replies, saved });
              },
              reject: (error) => {
                settle();
                reject(error);
              },
            });
          });
        },
      },
    ]),
  );

  const outbox = createMemoryReplyOutbox();
  // The test channel `c`: every send is logged in `delivered`.
  const channel = {
    id: 'c',
    async send(origin: InboundMessage, replies: readonly Reply[]) {
      delivered.push({ origin, replies });
      await options.onDeliver?.(origin, replies);
    },
  };
  const sender = createReplySender({
    outbox,
    channel: (id) => (id === 'c' ? channel : undefined),
    policy: (id) =>
      id === 'c'
        ? {
            sendTimeoutMs: 30_000,
            concurrency: 8,
            maxAgeMs: 3_600_000,
            retry: { baseDelayMs: 1000, maxDelayMs: 30_000 },
          }
        : undefined,
    outcomes: bus,
    random: options.random,
    logger: options.logger,
  });
  sender.start();
  const storing = options.storesReplies ? storingReplies(pool, outbox) : pool;
  const controller = createController({
    pool: options.wrapPool?.(storing) ?? storing,
    pipelines,
    policies: new Map(policies.map((policy) => [policy.id, policy])),
    outcomes: bus,
    outbox,
    addThrough: options.storesReplies ? sender.addThrough : undefined,
    random: options.random,
    logger: options.logger,
    handoffs: options.handoffs,
    typing: options.typing,
    queryFor: options.queryFor,
  });

  return {
    pool,
    controller,
    outbox,
    sender,
    outcomes,
    events,
    runs,
    delivered,
    get maxActive() {
      return maxActive;
    },
    /** Enqueues `text` in `chat` for `pipeline` as the ingress would. */
    async send(
      chat: string,
      text: string,
      extra: { pipeline?: string; sender?: string; chatType?: 'person' | 'group' } = {},
    ) {
      return pool.enqueue(
        queuedMessage(chat, text, { ...extra, pipeline: extra.pipeline ?? policies[0]?.id }),
      );
    },
    /** The pending run whose query text is `text`. */
    run(text: string): PendingRun {
      const found = runs.find((run) => run.query.text === text);
      if (found === undefined)
        throw new Error(`no run for "${text}"; running: ${runs.map((r) => r.query.text)}`);
      runs.splice(runs.indexOf(found), 1);
      return found;
    },
  };
}

/**
 * `pool`, storing the answer a settlement carries (`SettleOptions.replies`) in `outbox` once the
 * completion was applied and nothing when it is `lost`: both or neither, as a shared pool's one
 * write.
 */
function storingReplies(pool: QueryPool, outbox: ReplyOutbox): QueryPool {
  return {
    ...pool,
    storesReplies: true,
    async complete(turn, ended, options) {
      const settlement = await pool.complete(turn, ended, options);
      const replies = options?.replies;
      if (settlement === 'lost' || replies === undefined) return settlement;
      const { delivery, claimAt } = replies;
      replies.stored(
        claimAt === undefined
          ? { result: await outbox.add(delivery), claim: null }
          : await outbox.addAndClaim(delivery, claimAt),
      );
      return settlement;
    },
  };
}

/** Lets promise chains and zero-delay timers settle, with real or fake timers. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (vi.isFakeTimers()) await vi.advanceTimersByTimeAsync(0);
    else await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
