import type { BenchMessage, SchedulerFactory, SchedulerOptions } from '../support/scheduler.js';
import { Condition, Lock, Semaphore } from './asyncio.js';

/**
 * A port of LangBot's scheduling (`pipeline/pool.py`, `pipeline/controller.py`,
 * `provider/session/sessionmgr.py`): `QueryPool` keeps one list of queries and a condition on the
 * pool lock, notified on every add and every completion; `Controller.consumer` takes the pool
 * lock, scans the list for the first query whose session semaphore is free, acquires it, removes
 * the query from the list, and starts a task that takes the global semaphore around
 * `pipeline.run`; when the run ends the task releases the session under the pool lock and
 * notifies the condition. When no query can run, the consumer waits on the condition.
 *
 * Charitable to LangBot where a port could be harsher: `get_session` is a hash-map lookup (older
 * versions scanned a list; the current one also reads a reset generation from the database), it
 * is called without an extra await, and the steering and plugin hooks are left out.
 */

/** `pipeline_query.Query`: what `add_query` builds; `resp_*` stay empty until the pipeline fills them. */
interface Query {
  queryId: number;
  launcherId: string;
  senderId: string;
  message: BenchMessage;
  pipelineUuid: string;
  variables: Record<string, unknown>;
  respMessages: unknown[];
  respMessageChain: unknown[];
}

/** `provider_session.Session`: the per-session semaphore is all the scheduler reads. */
interface Session {
  launcherId: string;
  semaphore: Semaphore;
}

const PIPELINE_UUID = 'bench';

class QueryPool {
  queryIdCounter = 0;
  readonly poolLock = new Lock();
  readonly queries: Query[] = [];
  /** Kept for plugins' backward calls; removed once the query is processed. */
  readonly cachedQueries = new Map<number, Query>();
  readonly condition = new Condition(this.poolLock);

  async addQuery(message: BenchMessage): Promise<Query> {
    await this.condition.acquire();
    try {
      const queryId = this.queryIdCounter;
      const query: Query = {
        queryId,
        launcherId: message.session,
        senderId: message.inbound.sender.id,
        message,
        pipelineUuid: PIPELINE_UUID,
        variables: { _routed_by_rule: false },
        respMessages: [],
        respMessageChain: [],
      };
      this.queries.push(query);
      this.cachedQueries.set(queryId, query);
      this.queryIdCounter += 1;
      this.condition.notifyAll();
      return query;
    } finally {
      this.condition.release();
    }
  }
}

class SessionManager {
  readonly #sessions = new Map<string, Session>();
  readonly #sessionLimit: number;

  constructor(sessionLimit: number) {
    this.#sessionLimit = sessionLimit;
  }

  getSession(query: Query): Session {
    let session = this.#sessions.get(query.launcherId);
    if (session === undefined) {
      session = { launcherId: query.launcherId, semaphore: new Semaphore(this.#sessionLimit) };
      this.#sessions.set(query.launcherId, session);
    }
    return session;
  }
}

class Controller {
  readonly #pool: QueryPool;
  readonly #sessions: SessionManager;
  readonly #semaphore: Semaphore;
  readonly #options: SchedulerOptions;
  #running = false;

  constructor(pool: QueryPool, sessions: SessionManager, options: SchedulerOptions) {
    this.#pool = pool;
    this.#sessions = sessions;
    this.#semaphore = new Semaphore(options.globalLimit);
    this.#options = options;
  }

  async consumer(): Promise<void> {
    const pool = this.#pool;
    this.#running = true;
    while (this.#running) {
      let selected: Query | undefined;
      await pool.poolLock.acquire();
      try {
        for (const query of pool.queries) {
          const session = this.#sessions.getSession(query);
          if (!session.semaphore.locked()) {
            selected = query;
            await session.semaphore.acquire();
            break;
          }
        }
        if (selected === undefined) {
          await pool.condition.wait();
          continue;
        }
        pool.queries.splice(pool.queries.indexOf(selected), 1);
      } finally {
        pool.poolLock.release();
      }
      void this.#processQuery(selected);
    }
  }

  async #processQuery(query: Query): Promise<void> {
    await this.#semaphore.acquire();
    try {
      await this.#runPipeline(query);
    } finally {
      this.#semaphore.release();
    }
    await this.#pool.poolLock.acquire();
    try {
      this.#sessions.getSession(query).semaphore.release();
      this.#pool.condition.notifyAll();
    } finally {
      this.#pool.poolLock.release();
    }
  }

  /** `RuntimePipeline.run`: the stages (here the no-op), the reply sent, the query uncached. */
  async #runPipeline(query: Query): Promise<void> {
    const reply = await this.#options.pipeline(query.message.id, query.message.text);
    query.respMessages.push(reply);
    this.#options.onDone(query.message.id);
    this.#pool.cachedQueries.delete(query.queryId);
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#pool.poolLock.acquire();
    this.#pool.condition.notifyAll();
    this.#pool.poolLock.release();
  }
}

/** LangBot's `QueryPool` + `Controller.consumer`, behind the benchmarks' scheduler interface. */
export const createLangBotScheduler: SchedulerFactory = (options) => {
  const pool = new QueryPool();
  const controller = new Controller(pool, new SessionManager(options.sessionLimit), options);
  return {
    async enqueue(message) {
      await pool.addQuery(message);
    },
    start() {
      void controller.consumer();
    },
    stop: () => controller.stop(),
  };
};
