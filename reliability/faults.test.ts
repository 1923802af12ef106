import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { afterAll, describe, expect, it } from 'vitest';
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
import { type FaultyBackend, startFaultyBackend } from './support/faulty-backend.js';
import { profile, recordFigures } from './support/figures.js';
import { metricValue, scrapeMetrics } from '@switchboard/testkit/prometheus';
import { deriveSeed, runSeed, seededRandom } from './support/seeded-random.js';

/**
 * Faults (docs/RELIABILITY.md): a backend failing 30% of requests, a platform whose sends fail
 * and answer 429, and the process killed with SIGKILL three times and restarted on the same
 * SQLite file. Every message carries a unique marker (`<session>#<seq>`), so that whatever ids
 * the gateway gives it, what happened to it can be told apart from every other message.
 */

const SEED = runSeed();
const SIZES =
  profile === 'full'
    ? { apiSessions: 60, apiPerSession: 30, chats: 16, perChat: 40 }
    : { apiSessions: 30, apiPerSession: 20, chats: 10, perChat: 30 };
const KILLS = 3;
/** Time the whole send phase may take, and the drain after the last restart. */
const SEND_BOUND_MS = 120_000;
const DRAIN_BOUND_MS = 180_000;
const TURN_TIMEOUT_MS = 1_000;
/** What a user is sent when their message is dead-lettered: a reply that is not a completion. */
const DEAD_LETTER_REPLY = 'Sorry, that failed for good.';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const markerPattern = /^(\S+)#(\d+)$/;

/** The gateway of the moment: replaced after each kill; senders wait for the next one. */
class Supervisor {
  current: Promise<ServeProcess>;
  readonly started: ServeProcess[] = [];
  readonly killed = new Set<ServeProcess>();
  unexpectedExits = 0;

  constructor(private readonly launch: () => Promise<ServeProcess>) {
    this.current = this.start();
  }

  private start(): Promise<ServeProcess> {
    return this.launch().then((gateway) => {
      this.started.push(gateway);
      void gateway.exited.then(() => {
        if (!this.killed.has(gateway)) this.unexpectedExits += 1;
      });
      return gateway;
    });
  }

  /** SIGKILLs the running gateway and starts the next one on the same config and database. */
  async killAndRestart(): Promise<void> {
    const gateway = await this.current;
    this.killed.add(gateway);
    gateway.child.kill('SIGKILL');
    await gateway.exited;
    this.current = this.start();
    await this.current;
  }

  /** Resolves a gateway other than `tried` (the one that just failed a request). */
  async after(tried: ServeProcess): Promise<ServeProcess> {
    return eventually(async () => {
      const gateway = await this.current;
      return gateway !== tried && gateway;
    }, 60_000);
  }

  async stopAll(): Promise<void> {
    await Promise.all(
      this.started.map((gateway) => {
        this.killed.add(gateway);
        return gateway.stop('SIGKILL');
      }),
    );
  }
}

/** What the HTTP client saw, per marker. */
interface ClientLedger {
  tried: number;
  /** Answers 500–599 other than 503 (a 503 with Retry-After is backpressure or draining). */
  serverErrors: number;
  refused: number;
  /** 4xx answers other than 429 to these valid requests. */
  otherAnswers: number;
  connectionErrors: number;
  /** Gateway ids answered for each API marker (more than one only if deduplication failed). */
  apiIds: Map<string, Set<string>>;
  telegramMarkers: string[];
  /** The marker of each Telegram message, by its `message_id`: what a reply answers. */
  telegramMessages: Map<number, string>;
}

describe('faults: failing backend, failing platform, SIGKILL and restart', () => {
  let backend: FaultyBackend | undefined;
  let telegram: FakeTelegram | undefined;
  let supervisor: Supervisor | undefined;

  afterAll(async () => {
    await supervisor?.stopAll();
    await telegram?.close();
    await backend?.close();
  });

  it('ends every accepted message in exactly one outcome, in per-session order, with none lost', {
    timeout: SEND_BOUND_MS + DRAIN_BOUND_MS + 120_000,
  }, async () => {
    process.stdout.write(`faults: seed ${SEED} (RELIABILITY_SEED=${SEED} replays it)\n`);
    backend = await startFaultyBackend({ seed: SEED, failureRatio: 0.3, slowMs: TURN_TIMEOUT_MS + 500 });
    const fake = await startFakeTelegram();
    telegram = fake;
    const dir = tempDir();
    const configPath = writeConfig(
      dir,
      testConfig(
        dir,
        `audit: { store_text: full }
channels:
  - { id: api, type: openapi }
  - { id: tg, type: telegram, token: "${fake.token}", mode: polling, api_root: "${fake.url}" }
pipelines:
  - id: bot
    type: http
    url: "${backend.url}"
    timeout: ${TURN_TIMEOUT_MS}ms
    retry: { max_attempts: 10, base_delay: 100ms, max_delay: 1s }
    dead_letter_reply: "${DEAD_LETTER_REPLY}"
routing: { default: bot }
`,
      ),
    );
    const gateways = new Supervisor(() => startServe({ dir, configPath, env: { LOG_LEVEL: 'info' } }));
    supervisor = gateways;
    const ledger: ClientLedger = {
      tried: 0,
      serverErrors: 0,
      refused: 0,
      otherAnswers: 0,
      connectionErrors: 0,
      apiIds: new Map(),
      telegramMarkers: [],
      telegramMessages: new Map(),
    };
    const sendDeadline = Date.now() + SEND_BOUND_MS;

    /** One API session: its messages one after the other, each retried until accepted. */
    async function apiSession(session: number): Promise<void> {
      const random = seededRandom(deriveSeed(SEED, 'api', session));
      for (let seq = 0; seq < SIZES.apiPerSession; seq++) {
        const marker = `api-s${session}#${seq}`;
        while (Date.now() < sendDeadline) {
          const gateway = await gateways.current;
          ledger.tried += 1;
          const answer = await post(
            `${gateway.url}/v1/messages`,
            { session_id: `s${session}`, user_id: 'u', text: marker, wait: false },
            // A client that lost the answer to a kill sends the same request again.
            { 'idempotency-key': marker },
          ).catch(() => undefined);
          if (answer === undefined) {
            ledger.connectionErrors += 1;
            await gateways.after(gateway);
            continue;
          }
          if (answer.status === 202 || answer.status === 200) {
            const ids = ledger.apiIds.get(marker) ?? new Set<string>();
            ids.add(String(answer.body?.id));
            ledger.apiIds.set(marker, ids);
            break;
          }
          if (answer.status !== 429 && answer.status !== 503) {
            // Anything else is a wrong answer to a valid request: counted, and the message given up.
            if (answer.status >= 500) ledger.serverErrors += 1;
            else ledger.otherAnswers += 1;
            break;
          }
          ledger.refused += 1;
          const retryAfterS = Number(answer.headers.get('retry-after') ?? '1');
          await sleep(Math.min(1_000, retryAfterS * 1_000));
        }
        await sleep(random.between(50, 400));
      }
    }

    /** One Telegram chat: updates queued for polling; some sends fail or answer 429 first. */
    async function telegramChat(chat: number): Promise<void> {
      const random = seededRandom(deriveSeed(SEED, 'telegram', chat));
      const user = { id: 5_000 + chat, is_bot: false, first_name: `User${chat}` };
      for (let seq = 0; seq < SIZES.perChat; seq++) {
        const marker = `tg-c${chat}#${seq}`;
        const roll = random.next();
        if (roll < 0.15) fake.failNext('sendMessage', 1, { status: 429, retryAfterS: 1 });
        else if (roll < 0.3) fake.failNext('sendMessage', 1, { status: 502, description: 'Bad Gateway' });
        ledger.tried += 1;
        ledger.telegramMarkers.push(marker);
        const update = fake.pushUpdate({
          message: fake.message({
            chat: { id: user.id, first_name: user.first_name, type: 'private' },
            from: user,
            text: marker,
          }),
        });
        ledger.telegramMessages.set(update.message.message_id, marker);
        // Steady enough that the poller is handling an update at most kill moments.
        await sleep(random.between(100, 400));
      }
    }

    /** Three SIGKILLs at seeded moments, each followed by a restart on the same database. */
    async function killer(): Promise<number> {
      const random = seededRandom(deriveSeed(SEED, 'kills'));
      for (let kill = 0; kill < KILLS; kill++) {
        await sleep(random.between(1_000, 4_000));
        await gateways.killAndRestart();
      }
      return KILLS;
    }

    await gateways.current;
    const [kills] = await Promise.all([
      killer(),
      ...Array.from({ length: SIZES.apiSessions }, (_, session) => apiSession(session)),
      ...Array.from({ length: SIZES.chats }, (_, chat) => telegramChat(chat)),
    ]);

    // Drained: every update confirmed, nothing queued, running or waiting in the reply outbox of
    // the last gateway (replies are paced per chat, so the outbox empties after the queue).
    const last = await gateways.current;
    await eventually(
      async () => {
        if (fake.pendingUpdates().length > 0) return false;
        const metrics = await scrapeMetrics(last.url);
        return (
          metricValue(metrics, 'switchboard_queue_pending') === 0 &&
          metricValue(metrics, 'switchboard_inflight') === 0 &&
          metricValue(metrics, 'switchboard_outbox_pending') === 0
        );
      },
      DRAIN_BOUND_MS,
      'the last gateway drained',
    );

    // The recorded outcomes: final statuses of the API messages, the audit log, Telegram replies.
    const audit: Array<{ message_id: string; text: string | null; outcome: string; reason: string | null }> =
      [];
    let cursor: string | undefined;
    do {
      const page = await get(`${last.url}/admin/audit?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      audit.push(...page.body.items);
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor !== undefined);
    const auditByText = group(audit, (record) => record.text ?? '');

    const outcomes = new Map<string, string[]>();
    const auditMismatches: string[] = [];
    for (const [marker, ids] of ledger.apiIds) {
      const found: string[] = [];
      for (const id of ids) {
        const status = await get(`${last.url}/v1/messages/${id}`);
        const kind = String(status.body?.status);
        found.push(kind);
        const audited = audit.filter((record) => record.message_id === id);
        // Completed messages are not audited; every other outcome is, once.
        if (audited.length !== (kind === 'completed' ? 0 : 1))
          auditMismatches.push(
            `${marker} ${id} ${kind}, audited [${audited.map((record) => `${record.outcome}/${record.reason}`).join(' ')}]`,
          );
      }
      // Messages the client never learnt the id of (their answer was lost to a kill).
      for (const record of auditByText.get(marker) ?? []) {
        if (!ids.has(record.message_id)) found.push(`${record.outcome}`);
      }
      outcomes.set(
        marker,
        found.filter((kind) => kind !== 'queued' && kind !== 'running' && kind !== 'undefined'),
      );
    }
    // Telegram replies in the order they were sent, each tied to the message it answers.
    const sentReplies = fake.sentMessages().map((sent) => ({
      marker: ledger.telegramMessages.get(Number(sent.body.reply_parameters?.message_id)),
      text: String(sent.body.text),
    }));
    const unmatchedReplies = sentReplies.filter((reply) => reply.marker === undefined);
    const replies = group(
      sentReplies.filter((reply) => reply.marker !== undefined),
      (reply) => reply.marker as string,
    );
    for (const marker of ledger.telegramMarkers) {
      const audited = (auditByText.get(marker) ?? []).map((record) => record.outcome);
      // Completed only by the pipeline's answer (not by the dead-letter reply), and once however
      // often it was sent: a reply and an audit record are two outcomes of one message.
      const answered = (replies.get(marker) ?? []).some((reply) => reply.text === `echo: ${marker}`);
      outcomes.set(marker, answered ? ['completed', ...audited] : audited);
    }

    const accepted = [...ledger.apiIds.keys(), ...ledger.telegramMarkers];
    const lost = accepted.filter((marker) => (outcomes.get(marker) ?? []).length === 0);
    const multiple = accepted.filter((marker) => (outcomes.get(marker) ?? []).length > 1);
    const byKind = new Map<string, number>();
    for (const marker of accepted) {
      const kinds = outcomes.get(marker) ?? [];
      for (const kind of kinds) byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
    }
    const reasons = new Map<string, number>();
    for (const record of audit) {
      const key = `${record.outcome}/${record.reason ?? '-'}`;
      reasons.set(key, (reasons.get(key) ?? 0) + 1);
    }

    // At-least-once: a message the backend answered well more than once ran twice.
    const visits = backend.visits;
    const okRuns = group(
      visits.filter((visit) => visit.answer === 'ok'),
      (visit) => visit.marker,
    );
    const runTwice = [...okRuns.values()].filter((runs) => runs.length > 1).length;
    // At-least-once allows it (a crash after the send and before the pool's write): printed only.
    const repliedTwice = [...replies.entries()].filter(
      ([marker, sent]) => sent.filter((reply) => reply.text === `echo: ${marker}`).length > 1,
    ).length;
    const deadLetterReplies = sentReplies.filter((reply) => reply.text === DEAD_LETTER_REPLY).length;
    const answersByKind = new Map<string, number>();
    for (const visit of visits) answersByKind.set(visit.answer, (answersByKind.get(visit.answer) ?? 0) + 1);

    // Per-session order: the first visit, and the first good answer, of each message in sequence.
    const orderViolations = [
      ...sequenceViolations(visits),
      ...sequenceViolations(visits.filter((visit) => visit.answer === 'ok')),
    ];
    // Per-chat order of what the user sees: the first reply to each message (its answer or its
    // dead-letter reply) in message order; a re-run's repeat of an earlier reply is allowed.
    const replyOrderViolations = sequenceViolations(
      sentReplies.filter((reply): reply is { marker: string; text: string } => reply.marker !== undefined),
    );

    /** What the backend and the platform saw of one message, for a failure to say where it stopped. */
    const trace = (marker: string): string => {
      const answers = visits
        .filter((visit) => visit.marker === marker)
        .map((v) => `${v.answer}@${v.attempt} ${v.at % 100_000}ms ${v.messageId}`);
      const sends = fake
        .callsOf('sendMessage')
        .filter((call) => call.body.text === `echo: ${marker}`)
        .map((call) => String(call.status));
      return `backend: [${answers.join(' ')}], sendMessage: [${sends.join(' ')}]`;
    };

    const figures = {
      seed: SEED,
      'inputs tried': ledger.tried,
      '5xx answers (not 503)': ledger.serverErrors,
      'refused (429/503), retried': ledger.refused,
      'other 4xx answers': ledger.otherAnswers,
      'connection errors (kills)': ledger.connectionErrors,
      crashes: gateways.unexpectedExits,
      'SIGKILLs + restarts': kills,
      accepted: accepted.length,
      answered: byKind.get('completed') ?? 0,
      'dead-lettered': byKind.get('dead_lettered') ?? 0,
      lost: lost.length,
      'more than one outcome': multiple.length,
      'run twice (at-least-once)': runTwice,
      'Telegram replies sent twice': repliedTwice,
      'Telegram dead-letter replies': deadLetterReplies,
      'Telegram replies to no message sent': unmatchedReplies.length,
      'order violations': orderViolations.length,
      'Telegram reply order violations': replyOrderViolations.length,
      'audit/status mismatches': auditMismatches.length,
      'backend requests': visits.length,
      ...Object.fromEntries([...answersByKind].map(([kind, count]) => [`backend answer ${kind}`, count])),
      ...Object.fromEntries([...byKind].map(([kind, count]) => [`outcome ${kind}`, count])),
      ...Object.fromEntries([...reasons].map(([key, count]) => [`audit ${key}`, count])),
    };
    recordFigures('faults', figures);

    expect(accepted.length, 'every message sent was accepted in the time bound').toBe(
      SIZES.apiSessions * SIZES.apiPerSession + SIZES.chats * SIZES.perChat,
    );
    expect(gateways.unexpectedExits, 'gateway exits other than our SIGKILLs').toBe(0);
    expect(ledger.serverErrors, '5xx answers other than 503').toBe(0);
    expect(ledger.otherAnswers, '4xx answers other than 429').toBe(0);
    expect(
      lost.map((marker) => `${marker} (${trace(marker)})`),
      'accepted messages without an outcome',
    ).toEqual([]);
    expect(
      multiple.map((marker) => `${marker}: ${outcomes.get(marker)?.join(',')} (${trace(marker)})`),
      'messages with more than one outcome',
    ).toEqual([]);
    expect(
      auditMismatches.map((mismatch) => `${mismatch} (${trace(mismatch.split(' ')[0] ?? '')})`),
      'statuses and audit records that disagree',
    ).toEqual([]);
    expect(
      orderViolations.map((violation) => {
        const [late = '', early = ''] = violation.split(' after ');
        return `${violation} (${late}: ${trace(late)}; ${early}: ${trace(early)})`;
      }),
      'messages of one session that ran out of order',
    ).toEqual([]);
    expect(replyOrderViolations, 'replies of one chat sent out of message order').toEqual([]);
    expect(
      unmatchedReplies.map((reply) => reply.text),
      'Telegram replies that answer no message sent',
    ).toEqual([]);
  });
});

function group<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list === undefined) groups.set(k, [item]);
    else list.push(item);
  }
  return groups;
}

/**
 * Markers whose first appearance in `visits` came after a later message of the same session:
 * a session runs one message at a time, oldest first, so first appearances are in sequence.
 */
function sequenceViolations(visits: ReadonlyArray<{ marker: string }>): string[] {
  const highest = new Map<string, number>();
  const seen = new Set<string>();
  const violations: string[] = [];
  for (const { marker } of visits) {
    if (seen.has(marker)) continue;
    seen.add(marker);
    const match = markerPattern.exec(marker);
    if (match === null) continue;
    const [, session, seqText] = match as unknown as [string, string, string];
    const seq = Number(seqText);
    const before = highest.get(session) ?? -1;
    if (seq < before) violations.push(`${marker} after ${session}#${before}`);
    highest.set(session, Math.max(before, seq));
  }
  return violations;
}
