import { type FakePipeline, startFakePipeline } from '../../apps/gateway/test/fake-pipeline.js';
import { deriveSeed, seededRandom } from './seeded-random.js';

/** One call a replica made to its backend: the markers of its messages, and the load at the time. */
export interface BackendCall {
  /** The replica (its place in the fleet) that made the call. */
  replica: number;
  session: string;
  markers: string[];
  messageIds: string[];
  attempt: number;
  start: number;
  end?: number;
  /** Calls in flight at all the backends when this one arrived, itself included. */
  concurrent: number;
}

/**
 * The bot backend of a fleet: one real HTTP server on loopback per replica (each replica's
 * config names its own, which replicas may differ in), recording every call into one list and
 * counting the calls in flight across all of them — the cluster's concurrency as the bot sees it.
 * Each answer is an echo after a delay drawn from the seed, the turn and its attempt.
 */
export interface ClusterBackend {
  /** The backend URL for replica `index`. */
  urlFor(index: number): string;
  calls: BackendCall[];
  /** Calls of replica `index` in flight now. */
  runningOn(index: number): number;
  /** Resolves when the next call of replica `index` has been answered (the answer written). */
  nextAnswerOn(index: number): Promise<void>;
  close(): Promise<void>;
}

export async function startClusterBackend(options: {
  replicas: number;
  seed: number;
  delayMs: { min: number; max: number };
}): Promise<ClusterBackend> {
  const calls: BackendCall[] = [];
  const running = Array.from({ length: options.replicas }, () => 0);
  const answerWaiters = Array.from({ length: options.replicas }, () => [] as Array<() => void>);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const servers: FakePipeline[] = [];
  for (let replica = 0; replica < options.replicas; replica++) {
    const server = await startFakePipeline();
    server.respond = async (request) => {
      running[replica] = (running[replica] ?? 0) + 1;
      const call: BackendCall = {
        replica,
        session: request.session.chat_id,
        markers: request.messages.map((message) => message.text),
        messageIds: request.messages.map((message) => message.id),
        attempt: request.attempt,
        start: Date.now(),
        concurrent: running.reduce((sum, count) => sum + count, 0),
      };
      calls.push(call);
      try {
        const random = seededRandom(deriveSeed(options.seed, request.id, request.attempt));
        await sleep(random.between(options.delayMs.min, options.delayMs.max));
        return { status: 200, body: { replies: [{ text: `echo: ${request.text}` }] } };
      } finally {
        running[replica] = (running[replica] ?? 1) - 1;
        call.end = Date.now();
        // The answer is written as this returns: a waiter acting after a timer acts after it.
        for (const wake of answerWaiters[replica]?.splice(0) ?? []) wake();
      }
    };
    servers.push(server);
  }
  return {
    urlFor: (index) => (servers[index] as FakePipeline).url,
    calls,
    runningOn: (index) => running[index] ?? 0,
    nextAnswerOn: (index) => new Promise((resolve) => answerWaiters[index]?.push(resolve)),
    close: async () => {
      await Promise.all(servers.map((server) => server.close()));
    },
  };
}
