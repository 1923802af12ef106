import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isSwitchboardError, type SwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { rejectionOf, streamCounter } from '../query.js';
import {
  answerOf,
  contextOf,
  eventually,
  processExists,
  processState,
  turnOf,
  useProcessPipelines,
} from './harness.js';

const processPipeline = useProcessPipelines();

async function failureOf(promise: Promise<unknown>): Promise<SwitchboardError> {
  const error = await rejectionOf(promise);
  if (!isSwitchboardError(error)) throw error;
  return error;
}

describe('process pipeline', () => {
  describe('when the first turn arrives', () => {
    it('starts exactly one worker, lazily, and answers through it', async () => {
      const { pipeline, logger, events } = processPipeline({ workers: 4 });
      expect(pipeline.status?.()).toMatchObject({ state: 'listening', ok: true, sessions: 0 });
      expect(events()).toEqual([]);

      const answer = answerOf(await pipeline.run(turnOf('a', 'hello'), contextOf(logger)));

      expect(answer).toMatchObject({ n: 1, text: 'hello' });
      const starts = events().filter((event) => event.event === 'start');
      expect(starts.map((event) => event.pid)).toEqual([answer.pid]);
      expect(pipeline.status?.()).toMatchObject({ state: 'ready', ok: true, sessions: 1 });
    });
  });

  describe('when the gateway has secrets in its environment', () => {
    const secret = 'SWITCHBOARD_TEST_BOT_TOKEN';
    const valueIn = async (run: ReturnType<typeof processPipeline>, name: string) =>
      answerOf(await run.pipeline.run(turnOf('a', `env ${name}`), contextOf(run.logger))).value;

    it('gives the workers PATH and their env, not the rest; inherit_env gives them all', async () => {
      process.env[secret] = 'bot-token-value';
      try {
        const minimal = processPipeline({}, { AGENT_KEY: 'k1' });
        expect(await valueIn(minimal, secret)).toBeNull();
        expect(await valueIn(minimal, 'PATH')).toBe(process.env.PATH);
        expect(await valueIn(minimal, 'AGENT_KEY')).toBe('k1');

        const inheriting = processPipeline({ inherit_env: true });
        expect(await valueIn(inheriting, secret)).toBe('bot-token-value');
      } finally {
        delete process.env[secret];
      }
    });
  });

  describe('when a worker writes long stderr lines', () => {
    it('logs each cut to 4096 characters, its secrets masked before the cut', async () => {
      const secret = 'sk-agent-secret-0123456789';
      const { pipeline, logger } = processPipeline({}, { AGENT_KEY: secret });
      await pipeline.run(turnOf('a', 'stderr 4090'), contextOf(logger));
      await pipeline.run(turnOf('a', 'stderr 5000'), contextOf(logger));

      const lines = await eventually(() => {
        const found = logger.lines.filter((line) => line.msg === 'worker stderr').map((line) => line.line);
        return found.length === 2 && found;
      });
      expect(lines).toEqual([`${'x'.repeat(4090)}***`, 'x'.repeat(4096)]);
    });
  });

  describe('when 4 sessions share 2 workers', () => {
    it('keeps every session on its worker: its counter there counts up without a reset', async () => {
      const { pipeline, logger, events } = processPipeline({ workers: 2 });
      const sessions = ['s1', 's2', 's3', 's4'];
      const seen = new Map<string, Array<{ pid: number; n: number }>>();
      for (let round = 1; round <= 3; round++) {
        const answers = await Promise.all(
          sessions.map((session) => pipeline.run(turnOf(session, `round ${round}`), contextOf(logger))),
        );
        answers.map(answerOf).forEach((answer, index) => {
          const session = sessions[index] as string;
          seen.set(session, [...(seen.get(session) ?? []), { pid: answer.pid, n: answer.n }]);
        });
      }

      for (const runs of seen.values()) {
        expect(runs.map((run) => run.n)).toEqual([1, 2, 3]);
        expect(new Set(runs.map((run) => run.pid)).size).toBe(1);
      }
      const pids = new Set([...seen.values()].map((runs) => runs[0]?.pid));
      expect(pids.size).toBe(2);
      expect(events().filter((event) => event.event === 'start')).toHaveLength(2);
      expect(pipeline.status?.().sessions).toBe(4);
    });
  });

  describe('when a session stays idle past idle_timeout', () => {
    it('releases it, tells its worker, and binds its next turn afresh wherever the pool picks', async () => {
      const { pipeline, logger, events } = processPipeline({ workers: 2, idle_timeout: '300ms' });
      const first = answerOf(await pipeline.run(turnOf('a', 'one'), contextOf(logger)));

      await eventually(() => events().some((event) => event.event === 'release' && event.pid === first.pid));
      expect(pipeline.status?.().sessions).toBe(0);
      // Another session now takes the free worker; `a` comes back to a pool whose only free
      // place is a second worker.
      const other = pipeline.run(turnOf('b', 'slow 1500'), contextOf(logger));
      await eventually(() => events().some((event) => event.event === 'turn' && event.text === 'slow 1500'));
      const again = answerOf(await pipeline.run(turnOf('a', 'two'), contextOf(logger)));

      expect(again.pid).not.toBe(first.pid);
      expect(again.n).toBe(1);
      expect(answerOf(await other).pid).toBe(first.pid);
      expect(
        events().filter((event) => event.event === 'hold' && event.session === again.session),
      ).toHaveLength(2);
    });
  });

  describe('when max_active_sessions is 2 and 5 sessions talk', () => {
    it('never binds more than 2 at once (measured in the workers), answers all 5 in order per session', async () => {
      const { pipeline, logger, events } = processPipeline({
        workers: 2,
        max_active_sessions: 2,
        idle_timeout: '200ms',
      });
      const sessions = ['p1', 'p2', 'p3', 'p4', 'p5'];
      let mostBound = 0;
      const sampler = setInterval(() => {
        mostBound = Math.max(mostBound, pipeline.status?.().sessions ?? 0);
      }, 5);
      const conversations = await Promise.all(
        sessions.map(async (session) => {
          // One turn after the other, as the controller runs a session's turns.
          const answers = [];
          for (const text of ['first', 'second', 'third']) {
            answers.push(answerOf(await pipeline.run(turnOf(session, text), contextOf(logger))));
          }
          return answers;
        }),
      );
      clearInterval(sampler);

      for (const answers of conversations) {
        expect(answers.map((answer) => [answer.text, answer.n])).toEqual([
          ['first', 1],
          ['second', 2],
          ['third', 3],
        ]);
      }
      // Replay the workers' own hold/release events, both workers in the order they were written.
      let held = 0;
      let mostHeld = 0;
      for (const event of events()) {
        if (event.event === 'hold') held += 1;
        if (event.event === 'release') held -= 1;
        mostHeld = Math.max(mostHeld, held);
      }
      expect(mostHeld).toBe(2);
      expect(mostBound).toBeLessThanOrEqual(2);
      expect(
        new Set(
          events()
            .filter((e) => e.event === 'hold')
            .map((e) => e.session),
        ).size,
      ).toBe(5);
    });
  });

  describe('when a worker is killed with SIGKILL mid-turn', () => {
    it('fails the turn as retryable; a turn arriving while it restarts waits for the new worker and runs there', async () => {
      const { pipeline, logger, events } = processPipeline({ restart: { base_delay: '600ms' } });
      const running = pipeline.run(turnOf('a', 'slow 10000'), contextOf(logger));
      const turn = await eventually(() => events().find((event) => event.event === 'turn'));
      const killedAt = Date.now();
      process.kill(turn.pid, 'SIGKILL');

      const exited = await failureOf(running);
      expect(exited).toMatchObject({ code: 'SB_PIPELINE_WORKER_EXITED', retryable: true });
      // Its context died with it: the session is no longer bound.
      expect(pipeline.status?.().sessions).toBe(0);
      // Restarting after a crash, the pipeline can still run turns: they wait.
      expect(pipeline.status?.()).toMatchObject({ state: 'waking', ok: true });
      const waited = answerOf(await pipeline.run(turnOf('a', 'again'), contextOf(logger)));

      expect(waited.pid).not.toBe(turn.pid);
      expect(waited).toMatchObject({ text: 'again', n: 1 });
      const restart = events().filter((event) => event.event === 'start')[1];
      expect(restart?.at).toBeGreaterThanOrEqual(killedAt + 600);
      expect(pipeline.status?.()).toMatchObject({ state: 'ready', ok: true });
    });

    it('fails a turn still waiting for the restart at its timeout as a timeout, and starts nothing for it', async () => {
      const { pipeline, logger, events } = processPipeline({ restart: { base_delay: '1h' } });
      const first = answerOf(await pipeline.run(turnOf('a', 'hi'), contextOf(logger)));
      process.kill(first.pid, 'SIGKILL');
      await eventually(() => pipeline.status?.().state === 'waking');

      const error = await failureOf(pipeline.run(turnOf('a', 'again'), contextOf(logger, 300)));

      expect(error).toMatchObject({ code: 'SB_PIPELINE_TIMEOUT', retryable: true });
      expect(events().filter((event) => event.event === 'start')).toHaveLength(1);
    });

    it('restarts after the base delay again once a restarted worker got ready, even before it answered', async () => {
      const { pipeline, logger, events } = processPipeline({ restart: { base_delay: '200ms' } });
      const first = answerOf(await pipeline.run(turnOf('a', 'hi'), contextOf(logger)));
      process.kill(first.pid, 'SIGKILL');
      // Ready again, on the restarted worker.
      const restarted = await eventually(() => {
        const second = events().filter((event) => event.event === 'start')[1];
        return pipeline.status?.().state === 'ready' && second;
      });
      process.kill(restarted.pid, 'SIGKILL');

      const crashes = await eventually(() => {
        const found = logger.lines.filter((line) => line.msg === 'worker exited; restarting after backoff');
        return found.length === 2 && found;
      });
      expect(crashes.map((line) => [line.failures, line.restartInMs])).toEqual([
        [1, 200],
        [1, 200],
      ]);
    });

    it('answers the second attempt of each of 6 turns whose worker crashes once on the first', async () => {
      const { pipeline, logger } = processPipeline({ restart: { base_delay: '200ms' } });
      const markers = mkdtempSync(join(tmpdir(), 'switchboard-crash-once-'));
      for (const trial of [1, 2, 3, 4, 5, 6]) {
        const text = `crash-once ${join(markers, String(trial))}`;
        const id = `turn-crash-${trial}`;
        // The controller's retry of a retryable failure, at once: with max_attempts 2 the last.
        const first = await failureOf(pipeline.run(turnOf('a', text, 1, id), contextOf(logger)));
        expect(first).toMatchObject({ code: 'SB_PIPELINE_WORKER_EXITED', retryable: true });
        const second = answerOf(await pipeline.run(turnOf('a', text, 2, id), contextOf(logger)));
        expect(second.text).toBe(text);
      }
      // Each crash came after a ready worker: none waited longer than the first.
      const delays = logger.lines
        .filter((line) => line.msg === 'worker exited; restarting after backoff')
        .map((line) => line.restartInMs);
      expect(delays).toEqual([200, 200, 200, 200, 200, 200]);
    });

    it('binds a session waiting for room to a healthy worker, not to the dead one', async () => {
      const { pipeline, logger, events } = processPipeline({
        workers: 2,
        max_active_sessions: 1,
        restart: { base_delay: '10s' },
      });
      const running = pipeline.run(turnOf('a', 'slow 10000'), contextOf(logger));
      const turn = await eventually(() => events().find((event) => event.event === 'turn'));
      const waiting = pipeline.run(turnOf('b', 'hi'), contextOf(logger));
      await eventually(() => pipeline.status?.().details?.waiting_turns === 1);

      process.kill(turn.pid, 'SIGKILL');

      expect(await failureOf(running)).toMatchObject({ code: 'SB_PIPELINE_WORKER_EXITED' });
      const answer = answerOf(await waiting);
      expect(answer).toMatchObject({ session: expect.stringContaining('b'), n: 1 });
      expect(answer.pid).not.toBe(turn.pid);
    });

    it('drops an answer the dead generation still writes as stale; the retry answers', async () => {
      const { pipeline, logger, events } = processPipeline({ restart: { base_delay: '200ms' } });
      const running = pipeline.run(turnOf('a', 'late 1200', 1, 'turn-late'), contextOf(logger));
      // Killed once the process that will write its late answer exists.
      await eventually(() => events().find((event) => event.event === 'late'));
      const turn = await eventually(() => events().find((event) => event.event === 'turn'));
      process.kill(turn.pid, 'SIGKILL');
      expect(await failureOf(running)).toMatchObject({ code: 'SB_PIPELINE_WORKER_EXITED' });

      await eventually(() => pipeline.status?.().state === 'ready');
      const retried = await pipeline.run(turnOf('a', 'late 1200', 2, 'turn-late'), contextOf(logger));

      expect(answerOf(retried)).toMatchObject({ text: 'late 1200', n: 1 });
      const stale = await eventually(() => logger.lines.find((line) => line.msg.startsWith('stale answer')));
      expect(stale).toMatchObject({ level: 'warn', worker: 0, generation: 1, kind: 'answer' });
    });
  });

  describe('when one worker crashed and another slot is idle', () => {
    it('stays ready for turns (waking, ok) and runs a new session on the idle slot, not the restarting one', async () => {
      const { pipeline, logger } = processPipeline({ workers: 2, restart: { base_delay: '10s' } });
      const first = answerOf(await pipeline.run(turnOf('a', 'hi'), contextOf(logger)));
      process.kill(first.pid, 'SIGKILL');
      await eventually(() => pipeline.status?.().state !== 'ready');

      expect(pipeline.status?.()).toMatchObject({ state: 'waking', ok: true });
      const answer = answerOf(await pipeline.run(turnOf('b', 'hi'), contextOf(logger)));
      expect(answer.pid).not.toBe(first.pid);
    });
  });

  describe('when an idle worker exits with code 0', () => {
    it('is no failure: the pipeline listens and the next turn starts a worker without the backoff', async () => {
      const { pipeline, logger } = processPipeline(
        { restart: { base_delay: '10s' } },
        { WORKER_IDLE_EXIT: '300' },
      );
      const first = answerOf(await pipeline.run(turnOf('a', 'hi'), contextOf(logger)));
      await eventually(() => pipeline.status?.().state !== 'ready');

      expect(pipeline.status?.()).toMatchObject({ state: 'listening', ok: true });
      const answer = answerOf(await pipeline.run(turnOf('a', 'again'), contextOf(logger, 5000)));
      expect(answer.pid).not.toBe(first.pid);
      expect(answer.n).toBe(1);
      expect(logger.lines.some((line) => line.level === 'warn' && line.msg === 'worker exited')).toBe(false);
    });
  });

  describe('when the command cannot start', () => {
    it('goes failed at once and names the cause', async () => {
      const { pipeline, logger } = processPipeline({ command: '/nonexistent/agent-worker', args: [] });

      const error = await failureOf(pipeline.run(turnOf('a', 'hi'), contextOf(logger)));

      expect(error).toMatchObject({ code: 'SB_PIPELINE_WORKER_UNAVAILABLE', retryable: true });
      expect(pipeline.status?.()).toMatchObject({ state: 'failed', ok: false });
      expect(pipeline.status?.().detail).toMatch(/ENOENT/);
      expect(
        logger.lines.some((line) => line.level === 'error' && line.msg.startsWith('worker failed to start')),
      ).toBe(true);
    });

    it('restarts after base × 2^(n−1), capped at max_delay', async () => {
      const { pipeline, logger, events } = processPipeline(
        { restart: { base_delay: '300ms', max_delay: '1200ms' } },
        { WORKER_START: 'fail' },
      );
      await failureOf(pipeline.run(turnOf('a', 'hi'), contextOf(logger)));

      const starts = await eventually(() => {
        const found = events().filter((event) => event.event === 'start');
        return found.length >= 5 && found;
      });
      const gaps = starts.slice(1).map((start, index) => start.at - (starts[index]?.at ?? 0));
      // Each gap is the delay plus a process start; the last would be 2400 ms without the cap.
      [300, 600, 1200, 1200].forEach((delay, index) => {
        expect(gaps[index]).toBeGreaterThanOrEqual(delay);
        expect(gaps[index]).toBeLessThan(delay + 800);
      });
      const failed = await eventually(() => pipeline.status?.().state === 'failed' && pipeline.status());
      expect(failed.detail).toMatch(/^failed: exited with code 3; restart in \d+ ms$/);
    });

    it('fails a turn waiting for a worker that is never ready within start_timeout', async () => {
      const { pipeline, logger } = processPipeline({ start_timeout: '300ms' }, { WORKER_START: 'hang' });

      const error = await failureOf(pipeline.run(turnOf('a', 'hi'), contextOf(logger)));

      expect(error.code).toBe('SB_PIPELINE_WORKER_UNAVAILABLE');
      expect(error.message).toMatch(/start_timeout/);
    });
  });

  describe('when a worker streams its answer', () => {
    it('passes each {"delta"} on in order and answers with its replies', async () => {
      const { pipeline, logger } = processPipeline();
      const deltas: string[] = [];
      const context = { ...contextOf(logger), stream: (delta: string) => deltas.push(delta) };

      const answer = answerOf(await pipeline.run(turnOf('a', 'stream Hel lo'), context));

      expect(deltas).toEqual(['Hel', 'lo']);
      expect(answer.text).toBe('stream Hel lo');
    });
  });

  describe('when a worker streams deltas far past the largest answer kept', () => {
    it('fails the turn for good once the text passes the bound and cancels it there; the worker lives on', async () => {
      const maxAnswerBytes = 1024 * 1024;
      const { pipeline, logger, events } = processPipeline({}, {}, { maxAnswerBytes });
      const streamed = streamCounter();

      const error = await failureOf(
        pipeline.run(turnOf('a', `flood ${64 * 1024} ${maxAnswerBytes + 64 * 1024 * 1024}`), {
          ...contextOf(logger),
          stream: streamed.stream,
        }),
      );

      expect(error).toMatchObject({
        code: 'SB_PIPELINE_ANSWER_TOO_LARGE',
        retryable: false,
        message: `pipeline agent: the streamed text is larger than ${maxAnswerBytes} bytes`,
      });
      expect(streamed.characters).toBeLessThanOrEqual(maxAnswerBytes);
      // The worker stopped on the cancel: it wrote what was read, plus what the pipe held.
      const cancel = await eventually(() => events().find((event) => event.event === 'cancel'));
      expect(cancel.bytes).toBeLessThan(maxAnswerBytes + 1024 * 1024);
      const next = answerOf(await pipeline.run(turnOf('a', 'hi'), contextOf(logger)));
      expect(next.pid).toBe(cancel.pid);
    });
  });

  describe('when a worker writes one line without end', () => {
    it('fails the turn the line names for good, kills the worker before it wrote much past the bound', async () => {
      const maxAnswerBytes = 1024 * 1024;
      const { pipeline, logger, events } = processPipeline(
        { restart: { base_delay: '100ms' } },
        {},
        { maxAnswerBytes },
      );

      const error = await failureOf(
        pipeline.run(turnOf('a', `huge ${maxAnswerBytes + 64 * 1024 * 1024}`), contextOf(logger)),
      );

      expect(error).toMatchObject({
        code: 'SB_PIPELINE_ANSWER_TOO_LARGE',
        retryable: false,
        message: `pipeline agent: a line of the worker is larger than ${maxAnswerBytes} bytes`,
      });
      const killed = await eventually(() =>
        logger.lines.find((line) => line.msg === 'killing worker' && String(line.reason).includes('longer')),
      );
      expect(killed.reason).toBe(`wrote a line longer than ${maxAnswerBytes} characters`);
      const wrote = events().filter((event) => event.event === 'wrote');
      // Read up to the bound, plus what the pipe held when the worker was killed.
      expect(wrote.at(-1)?.bytes).toBeLessThan(maxAnswerBytes + 1024 * 1024);
    });
  });

  describe('when a run is aborted', () => {
    it('sends {cancel} and keeps a worker that answers it', async () => {
      const { pipeline, logger, events } = processPipeline();
      const aborted = new AbortController();
      const running = pipeline.run(turnOf('a', 'slow 10000'), { signal: aborted.signal, logger });
      const turn = await eventually(() => events().find((event) => event.event === 'turn'));
      aborted.abort();

      expect(await failureOf(running)).toMatchObject({ code: 'SB_PIPELINE_TIMEOUT', retryable: true });
      await eventually(() => events().some((event) => event.event === 'cancel' && event.id === turn.id));
      expect(answerOf(await pipeline.run(turnOf('a', 'next'), contextOf(logger))).pid).toBe(turn.pid);
    });

    it("runs the session's next turn only once the worker answered the cancelled one", async () => {
      const { pipeline, logger, events } = processPipeline();
      const aborted = new AbortController();
      const running = pipeline.run(turnOf('a', 'stubborn 800'), { signal: aborted.signal, logger });
      const turn = await eventually(() => events().find((event) => event.event === 'turn'));
      aborted.abort();
      await failureOf(running);

      const next = answerOf(await pipeline.run(turnOf('a', 'next'), contextOf(logger)));

      expect(next.pid).toBe(turn.pid);
      // One process wrote both, in this order.
      const log = events();
      const cancelledAnswered = log.findIndex((event) => event.event === 'answered' && event.id === turn.id);
      const nextStarted = log.findIndex((event) => event.event === 'turn' && event.text === 'next');
      expect(cancelledAnswered).toBeGreaterThan(-1);
      expect(nextStarted).toBeGreaterThan(cancelledAnswered);
    });

    it('kills and restarts a worker that ignores the cancel past cancel_grace', async () => {
      const { pipeline, logger, events } = processPipeline({
        cancel_grace: '300ms',
        restart: { base_delay: '200ms' },
      });
      const aborted = new AbortController();
      const running = pipeline.run(turnOf('a', 'stubborn 10000'), { signal: aborted.signal, logger });
      const turn = await eventually(() => events().find((event) => event.event === 'turn'));
      aborted.abort();
      await failureOf(running);

      await eventually(() => !processExists(turn.pid));
      expect(logger.lines.find((line) => line.msg === 'killing worker')?.reason).toMatch(/cancel_grace/);
      await eventually(() => pipeline.status?.().state === 'ready');
      expect(answerOf(await pipeline.run(turnOf('a', 'next'), contextOf(logger))).pid).not.toBe(turn.pid);
    });
  });

  describe('when the pipeline stops', () => {
    it('closes stdin, kills a worker that does not exit within the timeout, and leaves no process behind', async () => {
      const { pipeline, logger, events } = processPipeline({ workers: 2 }, { WORKER_ON_EOF: 'ignore' });
      await Promise.all(['a', 'b'].map((session) => pipeline.run(turnOf(session, 'hi'), contextOf(logger))));
      const pids = [...new Set(events().map((event) => event.pid))];
      expect(pids).toHaveLength(2);

      const startedAt = Date.now();
      await pipeline.stop?.({ timeoutMs: 300 });

      expect(Date.now() - startedAt).toBeLessThan(2000);
      for (const pid of pids) {
        expect(processState(pid)).toBeNull();
        expect(processExists(pid)).toBe(false);
      }
      expect(pipeline.status?.().state).toBe('stopped');
      expect(await failureOf(pipeline.run(turnOf('a', 'hi'), contextOf(logger)))).toMatchObject({
        code: 'SB_SHUTDOWN',
      });
    });
  });
});
