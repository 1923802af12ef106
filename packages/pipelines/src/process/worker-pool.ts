import {
  type Pipeline,
  type PipelineResult,
  type PipelineRunContext,
  type PipelineStatus,
  type Query,
  SwitchboardError,
} from '@switchboard/core';
import { abortError } from '../remote-errors.js';
import { poolStateOf } from './pool-lifecycle.js';
import { SessionBindings } from './session-binding.js';
import { type SlotState, WorkerSlot, type WorkerSlotOptions } from './worker-slot.js';

/** What a pool of workers needs, resolved from the `process` options (milliseconds). */
export interface WorkerPoolOptions extends Omit<WorkerSlotOptions, 'pipeline' | 'index' | 'onWorkerGone'> {
  workers: number;
  idleTimeoutMs: number;
  maxActiveSessions: number;
}

/**
 * The pipeline of a `process` entry: up to `workers` worker processes, started lazily, and the
 * sessions bound to them. A turn binds its session (or waits for room, `maxActiveSessions`), then
 * runs on that session's worker. A new session goes to a worker holding no session, else starts
 * the next worker, else joins the worker holding the fewest.
 */
export function createWorkerPool(id: string, options: WorkerPoolOptions): Pipeline {
  const logger = options.logger.child({ component: 'pipeline.process', pipeline: id });
  let stopped = false;
  const sessions = new SessionBindings({
    maxActive: options.maxActiveSessions,
    idleTimeoutMs: options.idleTimeoutMs,
    now: options.now,
    onRelease(session, slot) {
      logger.debug({ session, worker: slot }, 'session released');
      slots[slot]?.release(session);
    },
  });
  const slots = Array.from(
    { length: options.workers },
    (_, index) =>
      new WorkerSlot({
        pipeline: id,
        index,
        command: options.command,
        startTimeoutMs: options.startTimeoutMs,
        cancelGraceMs: options.cancelGraceMs,
        restart: options.restart,
        logger,
        mask: options.mask,
        maxAnswerBytes: options.maxAnswerBytes,
        now: options.now,
        onWorkerGone: (slot) => sessions.dropSlot(slot),
      }),
  );

  /**
   * The slot a new session binds to: the least loaded usable one, a running worker before an idle
   * slot (so a second worker starts only when every running one holds a session). Counts bound
   * sessions, not states: a slot bound a moment ago may not have started its worker yet. Only
   * when none is usable, the slot restarting soonest after a crash: the turn waits for it. Throws
   * SB_PIPELINE_WORKER_UNAVAILABLE when every slot failed to start.
   */
  function choose(): number {
    const load = (slot: WorkerSlot) => sessions.countOn(slot.index);
    const idle = (slot: WorkerSlot) => (slot.state === 'idle' ? 1 : 0);
    const [chosen] = slots
      .filter((slot) => slot.usable)
      .sort((a, b) => load(a) - load(b) || idle(a) - idle(b));
    if (chosen !== undefined) return chosen.index;
    const soonestRestart = (state: SlotState) =>
      slots.filter((slot) => slot.state === state).sort((a, b) => (a.restartAt ?? 0) - (b.restartAt ?? 0))[0];
    const restarting = soonestRestart('restarting');
    if (restarting !== undefined) return restarting.index;
    // Every slot failed to start: the one restarting soonest says when to try again.
    throw soonestRestart('failed')?.unavailable() ?? new SwitchboardError('SB_SHUTDOWN');
  }

  return {
    id,
    async run(query: Query, { signal, stream }: PipelineRunContext): Promise<PipelineResult> {
      if (stopped) throw new SwitchboardError('SB_SHUTDOWN');
      const binding = await sessions.acquire(query.session, choose, signal, (aborted) =>
        abortError(id, aborted, undefined),
      );
      let finished: Promise<void> | undefined;
      try {
        const worker = await (slots[binding.slot] as WorkerSlot).worker(signal).catch((error) => {
          // Its slot cannot run the turn: the session must not keep its place for idle_timeout.
          if (!signal.aborted) sessions.unbind(binding);
          throw error;
        });
        const request = worker.request(query, signal, stream);
        finished = request.finished;
        return await request.answer;
      } finally {
        // `finished` comes after the answer only after an abort: the worker may still run the turn
        // until it answers the cancel or is killed, and the session's retry must not overlap it.
        if (finished === undefined) sessions.done(binding);
        else sessions.doneWhen(binding, finished);
      }
    },
    status(): PipelineStatus {
      const state = poolStateOf(slots.map((slot) => slot.state));
      const failed = slots.find((slot) => slot.state === 'failed');
      const restartInMs = failed?.snapshot().restart_in_ms;
      return {
        state,
        ok: state !== 'failed',
        ...(state === 'failed' && failed !== undefined
          ? { detail: `failed: ${failed.lastError}; restart in ${restartInMs} ms` }
          : { detail: state }),
        sessions: sessions.size,
        details: {
          waiting_turns: sessions.waiting,
          workers: slots
            .filter((slot) => slot.state !== 'idle')
            .map((slot) => ({
              ...slot.snapshot(),
              sessions: sessions.countOn(slot.index),
            })),
        },
      };
    },
    async stop({ timeoutMs }) {
      stopped = true;
      sessions.close(new SwitchboardError('SB_SHUTDOWN'));
      await Promise.all(slots.map((slot) => slot.stop(timeoutMs)));
      logger.info({}, 'workers stopped');
    },
  };
}
