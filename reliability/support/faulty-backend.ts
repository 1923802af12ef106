import { type FakePipeline, startFakePipeline } from '../../apps/gateway/test/fake-pipeline.js';
import { deriveSeed, seededRandom } from './seeded-random.js';

/** What the backend did with one request. */
export type BackendAnswer = 'ok' | 'server_error' | 'slow' | 'hang' | 'malformed';

/** One request the backend saw: which message, which attempt, how it was answered. */
export interface BackendVisit {
  messageId: string;
  /** The marker text the test gave the message (unique per message). */
  marker: string;
  session: string;
  attempt: number;
  answer: BackendAnswer;
  at: number;
}

/** A bot backend for the `http` pipeline that fails a share of requests at random (seeded). */
export interface FaultyBackend {
  url: string;
  visits: BackendVisit[];
  /** Lets every hanging request go, so that the server can close. */
  close(): Promise<void>;
  pipeline: FakePipeline;
}

/**
 * Starts the backend. A share `failureRatio` of requests fail, spread evenly over: a 5xx, an
 * answer `slowMs` late (past the turn timeout, so the gateway has given up), a hang that only
 * ends when the gateway aborts, and a 200 whose body is not a reply (a fatal error: the message
 * is dead-lettered). The rest echo the text at once.
 */
export async function startFaultyBackend(options: {
  seed: number;
  failureRatio: number;
  slowMs: number;
}): Promise<FaultyBackend> {
  const pipeline = await startFakePipeline();
  const visits: BackendVisit[] = [];
  const released: Array<() => void> = [];
  const seen = new Map<string, number>();
  const faults: BackendAnswer[] = ['server_error', 'slow', 'hang', 'malformed'];
  pipeline.respond = async (request) => {
    // Tied to the message and how often it came before, so a seed replays the same faults.
    const visitsBefore = seen.get(request.text) ?? 0;
    seen.set(request.text, visitsBefore + 1);
    const roll = seededRandom(deriveSeed(options.seed, request.text, visitsBefore)).next();
    const answer: BackendAnswer =
      roll < options.failureRatio
        ? (faults[Math.floor((roll / options.failureRatio) * faults.length)] as BackendAnswer)
        : 'ok';
    for (const message of request.messages) {
      visits.push({
        messageId: message.id,
        marker: message.text,
        session: request.session.key,
        attempt: request.attempt,
        answer,
        at: Date.now(),
      });
    }
    const echo = { replies: [{ text: `echo: ${request.text}` }] };
    switch (answer) {
      case 'ok':
        return { status: 200, body: echo };
      case 'server_error':
        return { status: 503, body: { error: 'backend unavailable' } };
      case 'slow':
        await new Promise((resolve) => setTimeout(resolve, options.slowMs));
        return { status: 200, body: echo };
      case 'hang':
        // Never answers by itself: the gateway's turn timeout must abort it.
        await new Promise<void>((resolve) => released.push(resolve));
        return { status: 200, body: echo };
      case 'malformed':
        return { status: 200, body: 'not a reply {' };
    }
  };
  return {
    url: pipeline.url,
    visits,
    pipeline,
    async close() {
      for (const release of released.splice(0)) release();
      await pipeline.close();
    },
  };
}
