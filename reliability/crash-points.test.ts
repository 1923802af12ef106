import type { CrashPoint } from '@switchboard/core';
import { postgresReachable } from '@switchboard/testkit/postgres';
import { redisReachable } from '@switchboard/testkit/redis';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { afterAll, describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from '../apps/gateway/test/fake-pipeline.js';
import {
  type ServeProcess,
  eventually,
  get,
  post,
  startServe,
  tempDir,
  testConfig,
  writeConfig,
} from '../apps/gateway/test/serve-process.js';
import {
  type SharedStores,
  keptOutcomeCount,
  newStores,
  removeStores,
  storesConfig,
} from '../apps/gateway/test/shared-stores.js';
import { recordFigures } from './support/figures.js';
import { metricValueAt } from '@switchboard/testkit/prometheus';

/**
 * The crash-point matrix (docs/RELIABILITY.md "Crash points"): for every point where the process
 * can die between two durable writes, or between a write and a network call, on the message path,
 * and for both deployments (SQLite, one process; Redis + PostgreSQL, a fleet), one scenario:
 * start `switchboard serve` with `SWITCHBOARD_CRASH_AT=<point>`, send one message, check that the
 * process died by SIGKILL at that very point, start it again on the same stores, and check that
 * the message has exactly one final outcome (its status, and one audit record where the outcome
 * is audited), that the reply reached the platform at least once and at most as often as
 * docs/design.md allows, and that nothing is left queued, running or waiting to be sent.
 *
 * With Redis the restarted process is another replica (its id is new, as after a pod restart), so
 * what the dead one had claimed comes back when its lease ends (15 s for a turn, the send timeout
 * + 15 s for a delivery): the scenarios run concurrently to keep the matrix within CI's time.
 */

type Deployment = 'sqlite' | 'redis';
/**
 * What the backend and the platform do: `answer` echoes; `dead letter` answers with a body that is
 * no reply (fatal, the dead-letter reply is sent); `retry` fails once with a 503, then echoes;
 * `delivery failed` echoes, and Telegram refuses the reply with a 403 (`delivery_failed`);
 * `answer once` echoes the first request and answers any later one as `dead letter` does, so that
 * a turn run again after its answer was stored would end a second time.
 */
type Flow = 'answer' | 'dead letter' | 'retry' | 'delivery failed' | 'answer once';
type Channel = 'http' | 'telegram';

interface Row {
  point: CrashPoint;
  flow: Flow;
  /** Where the message comes from and its reply goes to: the HTTP channel, or a fake Telegram. */
  channel: Channel;
  /** The most times docs/design.md lets the reply reach the platform after a crash there. */
  maxSends: 1 | 2;
}

const ROWS: Row[] = [
  { point: 'ingress.after-idempotency-key', flow: 'answer', channel: 'http', maxSends: 1 },
  { point: 'ingress.after-journal', flow: 'answer', channel: 'http', maxSends: 1 },
  { point: 'ingress.after-journal', flow: 'answer', channel: 'telegram', maxSends: 1 },
  { point: 'claim.after-attempt-mark', flow: 'answer', channel: 'http', maxSends: 1 },
  { point: 'pipeline.after-answer', flow: 'answer', channel: 'http', maxSends: 1 },
  // The turn runs again; its answer has the delivery id of the first, which the outbox remembers.
  { point: 'outbox.after-add', flow: 'answer', channel: 'http', maxSends: 1 },
  { point: 'outbox.after-add', flow: 'answer', channel: 'telegram', maxSends: 1 },
  // The dead-letter reply is stored before the pool's write: "may be sent twice at worst".
  { point: 'outbox.after-add', flow: 'dead letter', channel: 'http', maxSends: 2 },
  // The journal marks the stored answer's messages answered (SQLite), or the script that stored
  // it completed the turn (Redis): the restart sends that answer and does not run the turn again.
  { point: 'outbox.after-add', flow: 'answer once', channel: 'http', maxSends: 1 },
  { point: 'outbox.after-add', flow: 'answer once', channel: 'telegram', maxSends: 1 },
  { point: 'settle.after-complete', flow: 'answer', channel: 'http', maxSends: 1 },
  // The dead-letter reply may be on its way when the completion lands.
  { point: 'settle.after-complete', flow: 'dead letter', channel: 'http', maxSends: 2 },
  { point: 'settle.after-retry', flow: 'retry', channel: 'http', maxSends: 1 },
  { point: 'send.before-platform-call', flow: 'answer', channel: 'http', maxSends: 1 },
  { point: 'send.before-platform-call', flow: 'answer', channel: 'telegram', maxSends: 1 },
  // "A crash after the send and before its removal commits": the one place a send repeats.
  { point: 'send.after-platform-call', flow: 'answer', channel: 'http', maxSends: 2 },
  { point: 'send.after-platform-call', flow: 'answer', channel: 'telegram', maxSends: 2 },
  { point: 'delivery.after-removal', flow: 'answer', channel: 'http', maxSends: 1 },
  { point: 'delivery.after-removal', flow: 'delivery failed', channel: 'telegram', maxSends: 1 },
  // The records landed, their kept copy (Redis) not forgotten: recovered again, the same records.
  { point: 'records.after-write', flow: 'answer', channel: 'http', maxSends: 1 },
  // The dead-letter reply may be on its way when the records land, as after the completion.
  { point: 'records.after-write', flow: 'dead letter', channel: 'http', maxSends: 2 },
  { point: 'records.after-write', flow: 'delivery failed', channel: 'telegram', maxSends: 1 },
];

const DEAD_LETTER_REPLY = 'Sorry, that failed for good.';
const WEBHOOK_SECRET = 'crash-matrix-secret';
/** A crash point is reached within this long of the message being sent, or never. */
const CRASH_BOUND_MS = 30_000;
/** Two lease ends (a turn's, then a delivery's) and the work after them. */
const SETTLE_BOUND_MS = 60_000;
/** The work left once the status is final: a kept outcome is recovered 30 s after its settlement. */
const DRAIN_BOUND_MS = 60_000;

const redisUsable = (await redisReachable()) && (await postgresReachable());
const deployments: Deployment[] = redisUsable ? ['sqlite', 'redis'] : ['sqlite'];

/** What one row found: what was wrong (nothing when it passed), and what happened. */
interface RowObservation {
  problems: string[];
  /** Times the reply reached the platform (HTTP: copies in the message's status). */
  sends: number;
  /** Requests the pipeline's backend got. */
  runs: number;
}

/** One finished row of the matrix, as printed and kept in docs/RELIABILITY.md. */
interface RowResult extends RowObservation {
  row: Row;
  deployment: Deployment;
  seconds: number;
}
const results: RowResult[] = [];

const rowName = (row: Row) => `${row.point} (${row.flow}, ${row.channel})`;

function configOf(
  deployment: Deployment,
  dir: string,
  stores: SharedStores | undefined,
  backend: FakePipeline,
  telegram: FakeTelegram,
): string {
  // A one-second send deadline keeps a dead replica's delivery lease at 16 s (the deadline + 15 s).
  const body = `channels:
  - { id: api, type: openapi, outbound: { send_timeout: 1s } }
  - id: tg
    type: telegram
    token: "${telegram.token}"
    mode: webhook
    api_root: "${telegram.url}"
    webhook: { secret_token: ${WEBHOOK_SECRET} }
    outbound: { send_timeout: 1s }
pipelines:
  - id: bot
    type: http
    url: "${backend.url}"
    timeout: 5s
    retry: { max_attempts: 5, base_delay: 100ms, max_delay: 500ms }
    dead_letter_reply: "${DEAD_LETTER_REPLY}"
routing: { default: bot }
`;
  if (deployment === 'sqlite') return testConfig(dir, `audit: { store_text: full }\n${body}`);
  const shared = stores as SharedStores;
  return storesConfig(shared, body).replace(
    `schema: ${shared.schema} }`,
    `schema: ${shared.schema}, store_text: full }`,
  );
}

/** The backend of the `bot` pipeline, answering as `flow` says; every request is recorded. */
async function backendFor(flow: Flow): Promise<FakePipeline> {
  const backend = await startFakePipeline();
  let failedOnce = false;
  let answered = false;
  backend.respond = async (request) => {
    if (flow === 'dead letter' || (flow === 'answer once' && answered))
      return { status: 200, body: 'not a reply {' };
    answered = true;
    if (flow === 'retry' && !failedOnce) {
      failedOnce = true;
      return { status: 503, body: { error: 'backend unavailable' } };
    }
    return { status: 200, body: { replies: [{ text: `echo: ${request.text}` }] } };
  };
  return backend;
}

interface AuditRecord {
  message_id: string;
  text: string | null;
  outcome: string;
  reason: string | null;
}

async function auditOf(gateway: ServeProcess): Promise<AuditRecord[]> {
  const page = await get(`${gateway.url}/admin/audit?limit=1000`);
  if (page.status !== 200) throw new Error(`GET /admin/audit answered ${page.status}`);
  return page.body.items as AuditRecord[];
}

/**
 * Nothing queued or running in the pool, nothing waiting in the reply outbox, and with Redis no
 * outcome kept unrecorded: one the dead replica left is recovered by the restarted one (30 s after
 * its settlement), and the row checks the records after that recovery too.
 */
async function drained(gateway: ServeProcess, stores: SharedStores | undefined): Promise<boolean> {
  const queues = await get(`${gateway.url}/admin/queues`);
  if (queues.status !== 200 || queues.body.pending !== 0 || queues.body.inflight !== 0) return false;
  if ((await metricValueAt(gateway.url, 'switchboard_outbox_pending')) !== 0) return false;
  return stores === undefined || (await keptOutcomeCount(stores)) === 0;
}

/** `check`, or its failure added to `problems`: a row reports everything it found wrong at once. */
async function expectWithin<T>(
  problems: string[],
  what: string,
  check: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await check();
  } catch (err) {
    problems.push(`${what}: ${(err as Error).message}`);
    return undefined;
  }
}

/** What one message must have come to. */
interface ExpectedOutcome {
  status: string;
  reason: string | null;
  reply: (marker: string) => string;
}

/** The expected outcomes by flow. */
const expectedOutcome: Record<Flow, ExpectedOutcome> = {
  answer: { status: 'completed', reason: null, reply: (marker) => `echo: ${marker}` },
  'answer once': { status: 'completed', reason: null, reply: (marker) => `echo: ${marker}` },
  retry: { status: 'completed', reason: null, reply: (marker) => `echo: ${marker}` },
  'dead letter': { status: 'dead_lettered', reason: 'fatal_error', reply: () => DEAD_LETTER_REPLY },
  'delivery failed': {
    status: 'dead_lettered',
    reason: 'delivery_failed',
    reply: (marker) => `echo: ${marker}`,
  },
};

/**
 * What is wrong with the audit records of one message: an audited outcome (any but completed) has
 * exactly one, with the expected reason; a completion has none.
 */
function recordProblems(records: readonly AuditRecord[], expected: ExpectedOutcome): string[] {
  const audited = expected.status !== 'completed';
  if (records.length !== (audited ? 1 : 0))
    return [
      `${records.length} audit records (${records.map((r) => `${r.outcome}/${r.reason}`).join(', ')}), expected ${audited ? 1 : 0}`,
    ];
  if (audited && records[0]?.reason !== expected.reason)
    return [`audit reason ${records[0]?.reason}, expected ${expected.reason}`];
  return [];
}

/**
 * One row of the matrix on one deployment: returns what was wrong (nothing when it passed). Every
 * process and fake server it started is stopped, and the Redis keys and schema removed, however it
 * ended.
 */
async function runRow(row: Row, deployment: Deployment, index: number): Promise<RowObservation> {
  const problems: string[] = [];
  let sends = 0;
  const marker = `crash-${index}-${deployment}`;
  const dir = tempDir();
  const stores = deployment === 'redis' ? newStores() : undefined;
  const backend = await backendFor(row.flow);
  const telegram = await startFakeTelegram();
  const gateways: ServeProcess[] = [];
  try {
    const configPath = writeConfig(dir, configOf(deployment, dir, stores, backend, telegram));
    const crashing = await startServe({
      dir,
      configPath,
      env: { LOG_LEVEL: 'info', SWITCHBOARD_CRASH_AT: row.point },
    });
    gateways.push(crashing);

    // The message: a keyed HTTP request, or a Telegram update delivered to the webhook. An answer
    // a crash swallowed is sent again after the restart, as a client or Telegram would.
    const user = { id: 4_000 + index, is_bot: false, first_name: 'Crash' };
    const update = {
      update_id: 900_000 + index,
      message: telegram.message({
        chat: { id: user.id, first_name: user.first_name, type: 'private' },
        from: user,
        text: marker,
      }),
    };
    if (row.flow === 'delivery failed')
      telegram.failNext('sendMessage', 1, {
        status: 403,
        description: 'Forbidden: bot was blocked by the user',
      });
    /** Whether the message was acknowledged, and the id an HTTP answer named. */
    const send = async (gateway: ServeProcess): Promise<{ id?: string } | undefined> => {
      if (row.channel === 'telegram') {
        const answer = await telegram
          .deliverWebhook(`${gateway.url}/telegram/tg`, update, WEBHOOK_SECRET)
          .catch(() => undefined);
        return answer?.status === 200 ? {} : undefined;
      }
      const answer = await post(
        `${gateway.url}/v1/messages`,
        { session_id: marker, user_id: 'u', text: marker, wait: false },
        { 'idempotency-key': marker },
      ).catch(() => undefined);
      if (answer === undefined) return undefined;
      if (answer.status !== 200 && answer.status !== 202) {
        problems.push(`POST /v1/messages answered ${answer.status}: ${JSON.stringify(answer.body)}`);
        return undefined;
      }
      return { id: String(answer.body?.id) };
    };
    const ids = new Set<string>();
    const first = await send(crashing);
    if (first?.id !== undefined) ids.add(first.id);

    // The process died at the point, by SIGKILL, and said where: a point never reached fails the row.
    const exited = await expectWithin(problems, `crash at ${row.point}`, () =>
      eventually(
        () => crashing.child.exitCode !== null || crashing.child.signalCode !== null,
        CRASH_BOUND_MS,
        'exit',
      ),
    );
    if (exited === undefined) {
      problems.push(`never reached ${row.point} (the process did not die)`);
      return { problems, sends, runs: backend.requests.length };
    }
    // Its last words may still be on their way through the pipe when the exit is seen.
    await expectWithin(problems, 'stderr read to its end', () =>
      eventually(() => crashing.child.stderr?.readableEnded !== false, 5_000, 'stderr closed'),
    );
    if (crashing.child.signalCode !== 'SIGKILL')
      problems.push(
        `exited with code ${crashing.child.exitCode} / ${crashing.child.signalCode}, not SIGKILL`,
      );
    if (!crashing.stderr.join('').includes(`crash point ${row.point}\n`))
      problems.push(`the process died without naming ${row.point}: ${crashing.stderr.join('').slice(-500)}`);

    const restarted = await startServe({ dir, configPath, env: { LOG_LEVEL: 'info' } });
    gateways.push(restarted);
    if (first === undefined) {
      const again = await eventually(
        async () => (await send(restarted)) ?? false,
        30_000,
        'the message accepted',
      );
      if (again.id !== undefined) ids.add(again.id);
    }

    const expected = expectedOutcome[row.flow];
    const reply = expected.reply(marker);
    const audited = expected.status !== 'completed';
    if (row.channel === 'http') {
      if (ids.size !== 1) problems.push(`the key named ${ids.size} message ids: ${[...ids].join(', ')}`);
      const id = [...ids][0] as string;
      const statusOf = async () => {
        const answer = await get(`${restarted.url}/v1/messages/${id}`);
        const body = answer.body as { status?: string; delivery?: string | null };
        const final = body.status !== 'queued' && body.status !== 'running' && body.delivery !== 'pending';
        return { shown: answer.body, final: answer.status === 200 && final ? answer.body : undefined };
      };
      await expectWithin(problems, 'final status', () =>
        eventually(async () => (await statusOf()).final, SETTLE_BOUND_MS, `GET /v1/messages/${id} final`),
      );
      await expectWithin(problems, 'drained', () =>
        eventually(() => drained(restarted, stores), DRAIN_BOUND_MS, 'drained'),
      );
      // Read again once nothing is left to send: a dead-letter reply is appended to the status
      // after it turned final.
      const { shown, final } = await statusOf();
      if (final === undefined) problems.push(`status of ${id} is ${JSON.stringify(shown)}`);
      else {
        if (final.status !== expected.status)
          problems.push(`status ${final.status}, expected ${expected.status}`);
        if (final.status === 'completed' && final.delivery !== 'delivered')
          problems.push(`delivery ${final.delivery}, expected delivered`);
        sends = (final.replies as Array<{ text: string }>).filter((sent) => sent.text === reply).length;
        if (sends < 1 || sends > row.maxSends)
          problems.push(`the reply shows ${sends} times in the status (allowed 1..${row.maxSends})`);
      }
      const records = (await auditOf(restarted)).filter((record) => record.message_id === id);
      problems.push(...recordProblems(records, expected));
    } else {
      // A Telegram message has no status: its outcome is the reply (completed, not audited) or
      // its one audit record (dead-lettered), never both.
      await expectWithin(problems, 'final outcome', () =>
        eventually(
          async () =>
            audited
              ? (await auditOf(restarted)).some((record) => record.text === marker)
              : telegram.sentMessages().some((sent) => sent.body.text === reply),
          SETTLE_BOUND_MS,
          audited ? 'the audit record' : 'the reply sent',
        ),
      );
      await expectWithin(problems, 'drained', () =>
        eventually(() => drained(restarted, stores), DRAIN_BOUND_MS, 'drained'),
      );
      const records = (await auditOf(restarted)).filter((record) => record.text === marker);
      problems.push(...recordProblems(records, expected));
      // Reached the platform: answered 200 by the fake; for a refused reply, the refused call.
      sends = audited
        ? telegram.callsOf('sendMessage').filter((call) => call.body.text === reply).length
        : telegram.sentMessages().filter((sent) => sent.body.text === reply).length;
      if (sends < 1 || sends > row.maxSends)
        problems.push(`the reply reached Telegram ${sends} times (allowed 1..${row.maxSends})`);
      if (audited && telegram.sentMessages().some((sent) => sent.body.text === reply))
        problems.push('a dead-lettered reply was delivered too');
    }
    if (backend.requests.length === 0) problems.push('the backend was never asked');
    if (restarted.child.exitCode !== null || restarted.child.signalCode !== null)
      problems.push(
        `the restarted gateway exited (${restarted.child.exitCode ?? restarted.child.signalCode})`,
      );
    return { problems, sends, runs: backend.requests.length };
  } finally {
    await Promise.all(gateways.map((gateway) => gateway.stop('SIGTERM')));
    await telegram.close();
    await backend.close();
    if (stores !== undefined) await removeStores(stores);
  }
}

describe.concurrent('crash points: die at each named point, restart on the same stores', () => {
  afterAll(() => {
    const figures: Record<string, string> = {};
    for (const deployment of deployments) {
      for (const row of ROWS) {
        const result = results.find((found) => found.row === row && found.deployment === deployment);
        if (result === undefined) continue;
        const verdict = result.problems.length === 0 ? 'pass' : 'FAIL';
        figures[`${rowName(row)} · ${deployment}`] =
          `${verdict} · sent ${result.sends}× · ran ${result.runs}× · ${result.seconds.toFixed(0)} s`;
      }
    }
    recordFigures('crash points', figures);
  });

  for (const deployment of deployments) {
    ROWS.forEach((row, index) => {
      it(`${rowName(row)} on ${deployment}: one final outcome, the reply sent as allowed, nothing stuck`, {
        timeout: CRASH_BOUND_MS + SETTLE_BOUND_MS + DRAIN_BOUND_MS + 60_000,
      }, async () => {
        const started = Date.now();
        const observed = await runRow(row, deployment, index);
        results.push({ row, deployment, ...observed, seconds: (Date.now() - started) / 1000 });
        expect(observed.problems, `${rowName(row)} on ${deployment}`).toEqual([]);
      });
    });
  }
});
