import type { InboundMessage, SessionKey } from '@switchboard/core';

/** One message of a workload, built before any timing starts and shared by every scheduler. */
export interface BenchMessage {
  id: string;
  /** Switchboard's session key of `inbound`; the baselines key their sessions on it too. */
  session: SessionKey;
  text: string;
  inbound: InboundMessage;
}

/** The no-op async pipeline: it answers on the next microtask, so only the scheduler is measured. */
export type BenchPipeline = (messageId: string, text: string) => Promise<string>;

/** The limits and hooks every scheduler under test gets. */
export interface SchedulerOptions {
  /** Turns running at once across all sessions (`concurrency.pipeline`). */
  globalLimit: number;
  /** Turns running at once per session (`concurrency.session`). */
  sessionLimit: number;
  pipeline: BenchPipeline;
  /** Called once per message when its reply has been handed on, i.e. when its turn is over. */
  onDone: (messageId: string) => void;
}

/** A scheduler as the benchmarks drive it: accept, start dispatching, stop. */
export interface SchedulerUnderTest {
  /** Accepts one message; resolves once it is queued. */
  enqueue(message: BenchMessage): Promise<void>;
  /** Starts the consumer; messages enqueued before it wait until then. */
  start(): void;
  /** Stops the consumer once the work is done, so the next run starts from a clean slate. */
  stop(): Promise<void>;
}

export type SchedulerFactory = (options: SchedulerOptions) => SchedulerUnderTest;

/** Counts finished messages and lets a caller wait for a number of them. */
export interface CompletionTracker {
  readonly onDone: (messageId: string) => void;
  readonly completed: number;
  /** Resolves once `count` messages in all have finished. */
  until(count: number): Promise<void>;
}

export function createCompletionTracker(onEach?: (messageId: string) => void): CompletionTracker {
  let completed = 0;
  let target = Number.POSITIVE_INFINITY;
  let reached: (() => void) | undefined;
  return {
    onDone(messageId) {
      completed += 1;
      onEach?.(messageId);
      if (completed >= target) {
        target = Number.POSITIVE_INFINITY;
        reached?.();
      }
    },
    get completed() {
      return completed;
    },
    until(count) {
      if (completed >= count) return Promise.resolve();
      target = count;
      return new Promise<void>((resolve) => {
        reached = resolve;
      });
    },
  };
}

/** The pipeline of the throughput and backlog runs: echo the text, one microtask later. */
export const noopPipeline: BenchPipeline = async (_messageId, text) => text;
