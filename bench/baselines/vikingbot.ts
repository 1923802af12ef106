import type { BenchMessage, SchedulerFactory, SchedulerOptions } from '../support/scheduler.js';
import { Lock, Queue, Semaphore } from './asyncio.js';

/**
 * A port of VikingBot's scheduling after OpenViking PR #4736: channels publish to one
 * inbound `asyncio.Queue`; `AgentLoop.run` takes each message, gets its session's lock from a
 * map (`setdefault`), counts one more user of it, and starts a task per message. The task takes
 * the session lock, then the global `Semaphore`, runs `_process_message`, publishes the reply on
 * the outbound queue, and in `finally` counts itself out, deleting the lock when nobody else
 * holds or waits for it. A single outbound consumer hands replies to channels.
 */

/** `OutboundMessage`: the reply and the message it answers. */
interface Outbound {
  messageId: string;
  content: string;
}

class MessageBus {
  readonly inbound = new Queue<BenchMessage>();
  readonly outbound = new Queue<Outbound>();

  publishInbound(message: BenchMessage): Promise<void> {
    return this.inbound.put(message);
  }

  consumeInbound(): Promise<BenchMessage> {
    return this.inbound.get();
  }

  publishOutbound(message: Outbound): Promise<void> {
    return this.outbound.put(message);
  }

  consumeOutbound(): Promise<Outbound> {
    return this.outbound.get();
  }
}

class AgentLoop {
  readonly #bus: MessageBus;
  readonly #options: SchedulerOptions;
  readonly #messageSemaphore: Semaphore;
  readonly #sessionLocks = new Map<string, Lock>();
  readonly #sessionLockUsers = new Map<string, number>();
  readonly #messageTasks = new Set<Promise<void>>();
  #running = false;

  constructor(bus: MessageBus, options: SchedulerOptions) {
    this.#bus = bus;
    this.#options = options;
    this.#messageSemaphore = new Semaphore(options.globalLimit);
  }

  async run(): Promise<void> {
    this.#running = true;
    try {
      while (this.#running) {
        const message = await this.#bus.consumeInbound();
        if (!this.#running) {
          await this.#bus.publishInbound(message);
          break;
        }
        let sessionLock = this.#sessionLocks.get(message.session);
        if (sessionLock === undefined) {
          sessionLock = new Lock();
          this.#sessionLocks.set(message.session, sessionLock);
        }
        this.#sessionLockUsers.set(message.session, (this.#sessionLockUsers.get(message.session) ?? 0) + 1);
        const task = this.#processQueuedMessage(message, sessionLock);
        this.#messageTasks.add(task);
        void task.finally(() => this.#messageTasks.delete(task));
      }
    } finally {
      this.#running = false;
      if (this.#messageTasks.size > 0) await Promise.all(this.#messageTasks);
    }
  }

  async #processQueuedMessage(message: BenchMessage, sessionLock: Lock): Promise<void> {
    try {
      await sessionLock.acquire();
      try {
        await this.#messageSemaphore.acquire();
        try {
          const response = await this.#processMessage(message);
          await this.#bus.publishOutbound(response);
        } finally {
          this.#messageSemaphore.release();
        }
      } finally {
        sessionLock.release();
      }
    } finally {
      const users = (this.#sessionLockUsers.get(message.session) ?? 1) - 1;
      if (users > 0) this.#sessionLockUsers.set(message.session, users);
      else {
        this.#sessionLockUsers.delete(message.session);
        this.#sessionLocks.delete(message.session);
      }
    }
  }

  /** `_process_message`: the agent turn, here the no-op pipeline. */
  async #processMessage(message: BenchMessage): Promise<Outbound> {
    return { messageId: message.id, content: await this.#options.pipeline(message.id, message.text) };
  }

  stop(): void {
    this.#running = false;
  }
}

/** VikingBot's `AgentLoop.run` + outbound dispatch, behind the benchmarks' scheduler interface. */
export const createVikingBotScheduler: SchedulerFactory = (options) => {
  const bus = new MessageBus();
  const loop = new AgentLoop(bus, options);
  let dispatching = false;

  /** `ChannelManager._dispatch_outbound`: one loop handing every reply to its channel. */
  async function dispatchOutbound(): Promise<void> {
    while (dispatching) {
      const reply = await bus.consumeOutbound();
      options.onDone(reply.messageId);
    }
  }

  return {
    enqueue: (message) => bus.publishInbound(message),
    start() {
      dispatching = true;
      void loop.run();
      void dispatchOutbound();
    },
    // Both loops wait on a queue that will not fill again; they are left to the garbage collector.
    async stop() {
      loop.stop();
      dispatching = false;
    },
  };
};
