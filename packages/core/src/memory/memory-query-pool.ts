import { crashAfter } from '../observability/crash-point.js';
import type { Concurrency, PoolPipelinePolicy, QueueLimits } from '../scheduling/pipeline-policy.js';
import { type TenantShare, defaultTenantShare } from '../scheduling/tenant-share.js';
import { DEFAULT_TENANT } from '../model/message.js';
import type { AppendResult, Journal } from '../ports/journal.js';
import { type Logger, silentLogger } from '../ports/logger.js';
import type {
  ClaimedTurn,
  EnqueueResult,
  PoolStats,
  QueryPool,
  RunningTurn,
  SessionsView,
  SettleOptions,
  Turn,
  TurnLease,
} from '../ports/query-pool.js';
import type { Settlement } from '../ports/settlement.js';
import type { QueuedMessage } from '../model/queued-message.js';
import type { SessionKey } from '../model/session-key.js';
import { ExpiringKeys } from '../structures/expiring-keys.js';
import { Fifo } from '../structures/fifo.js';
import { type HeapNode, IndexedHeap } from '../structures/indexed-heap.js';
import { WakeTimer } from '../structures/wake-timer.js';
import { requestIdOf, turnIdOf } from '../model/turn-id.js';

export interface MemoryQueryPoolOptions {
  concurrency: Concurrency;
  limits: QueueLimits;
  pipelines: readonly PoolPipelinePolicy[];
  /** The tenants that configure a share; any other tenant has `defaultTenantShare`. */
  tenants?: readonly TenantShare[];
  /** Write-through journal; without one the pool is not durable. */
  journal?: Journal;
  /** Where failed write-behind journal writes (turn starts, removals) are reported. */
  logger?: Logger;
  /** The wait suggested to refused senders. Default: 1000 ms. */
  refusalRetryAfterMs?: number;
  now?: () => number;
}

interface Entry extends HeapNode {
  queued: QueuedMessage;
  /** Acceptance order: the pool's measure of age. */
  seq: number;
  /** The slots of the message's pipeline, looked up once on acceptance rather than on every move. */
  slots: PipelineSlots;
}

interface Session extends HeapNode {
  key: string;
  queue: Fifo<Entry>;
  /** The session's turns in flight; the session slot is taken while they run. */
  claims: Claim[];
  /** The head's `seq`, kept while the session sits in a heap: compares read a field, not the queue. */
  headSeq: number;
  /** When the head becomes runnable; the delayed heap's key. */
  dueAt: number;
  /** The heap holding the session: a pipeline's ready heap, the delayed heap, or none. */
  heap: IndexedHeap<Session> | null;
  /** The pipeline whose ready heap holds it, when one does. */
  readyIn: PipelineSlots | null;
}

interface PipelineSlots {
  policy: PoolPipelinePolicy;
  /** The tenant whose pipeline it is. */
  tenant: TenantSlots;
  inflight: number;
  /** Sessions whose head is for this pipeline and may run now, oldest head first. */
  ready: IndexedHeap<Session>;
  /** The pipeline's waiting messages, oldest first: its pending count and oldest wait. */
  waiting: IndexedHeap<Entry>;
}

/** A tenant's share and what it uses of it (docs/design.md §10 "Fair shares"). */
interface TenantSlots {
  share: TenantShare;
  inflight: number;
  /** Its messages waiting, and the places its enqueues awaiting their journal append hold. */
  pending: number;
  reserved: number;
  /**
   * Slot time its ended turns held, ms (plus what it was lifted by on coming back from idle);
   * with `claimedAtSum`, the Σ of its running turns' claim times, its slot time now is
   * `usedMs + inflight × now − claimedAtSum`: its share is measured in slot time, so a tenant of
   * quick turns is not charged like one of slow turns.
   */
  usedMs: number;
  claimedAtSum: number;
  /**
   * Start-time fair queuing over its turns, for tenants that used as much slot time for their
   * weights (claims in one instant, instant turns): the virtual time at which its next turn
   * starts, moved on by 1 / weight per claim.
   */
  pass: number;
}

/**
 * A turn in flight, kept on its session rather than in a map keyed by turn id: a map taking one
 * insert and one delete per turn makes V8 rehash its table in the old generation again and again.
 */
interface Claim {
  /** The pool that holds the claim. */
  pool: QueryPool;
  /** The lease token handed out with the turn: a copy of the turn is matched by it. */
  token: string;
  session: Session;
  slots: PipelineSlots;
  /** The tenant its slot was counted against (a reload may give the pipeline to another). */
  tenant: TenantSlots;
  entries: Entry[];
  turnId: string;
  /** When it was claimed, ms. */
  claimedAt: number;
  /** Position in the pool's list of running claims, for O(1) removal. */
  runningIndex: number;
}

/**
 * A turn as the pool hands it out: the `Turn` fields, plus a private link back to its claim, so
 * that complete, retry and abandon reach the session without looking its key up (at 10k sessions
 * that lookup was a tenth of the pool's time). Private: callers see, copy and log a plain turn.
 */
class LinkedTurn implements ClaimedTurn {
  readonly #claim: Claim;
  more = false;

  constructor(
    readonly id: string,
    readonly session: SessionKey,
    readonly pipeline: string,
    readonly messages: QueuedMessage[],
    readonly attempt: number,
    readonly lease: TurnLease,
    claim: Claim,
  ) {
    this.#claim = claim;
  }

  /** The claim behind `turn`, when `turn` is one a pool handed out. */
  static claimOf(turn: Turn): Claim | undefined {
    return #claim in turn ? turn.#claim : undefined;
  }
}

const NO_TURN: Promise<ClaimedTurn | null> = Promise.resolve(null);
const DUPLICATE: EnqueueResult = { accepted: false, reason: 'duplicate' };
const SETTLED: Promise<Settlement> = Promise.resolve('settled');
const LOST: Promise<Settlement> = Promise.resolve('lost');

/** Used for messages of a pipeline no longer configured: run one at a time so the controller can drop them. */
const fallbackPolicy = (id: string): PoolPipelinePolicy => ({
  id,
  maxConcurrency: Number.POSITIVE_INFINITY,
  aggregation: { enabled: false, delayMs: 0, maxWaitMs: 0, maxMessages: 1 },
  busyMode: 'queue',
});

/**
 * The in-memory `QueryPool`, optionally durable through a `Journal` (docs/design.md §2 "Query pool").
 *
 * Structure: a map of sessions (deleted as soon as one has nothing queued or running), one ready
 * heap per pipeline ordered by head age, and one delayed heap ordered by due time (debounce and
 * backoff) served by a single timer. Claim compares the tops of the pipelines with free slots
 * (theirs and their tenant's) by their tenant's slot time used for its weight, its fair-queuing
 * pass, then head age: O(pipelines with a ready session) per claim, O(log sessions) the rest.
 */
export function createMemoryQueryPool(options: MemoryQueryPoolOptions): QueryPool {
  const { journal } = options;
  let { concurrency, limits } = options;
  const logger = (options.logger ?? silentLogger).child({ component: 'pool' });
  const now = options.now ?? Date.now;
  const refusalRetryAfterMs = options.refusalRetryAfterMs ?? 1000;

  const sessions = new Map<string, Session>();
  const pipelines = new Map<string, PipelineSlots>();
  const delayed = new IndexedHeap<Session>(
    (a, b) => a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.headSeq < b.headSeq),
  );
  const listeners = new Set<() => void>();
  /**
   * The pipelines with a ready session: what a claim compares, so that idle pipelines (a thousand
   * tenants' mostly) cost it nothing.
   */
  const readyPipelines = new Set<PipelineSlots>();
  const tenants = new Map<string, TenantSlots>();
  /** Start-time fair queuing's virtual time: the pass at which the last claimed turn started. */
  let virtualTime = 0;
  /** The slot time for its weight of the tenant last claimed for: where a tenant back from idle starts. */
  let fairTime = 0;
  // Delivery keys of a pool without a journal; a journaled pool marks them in the journal's write.
  const seenDeliveries = new ExpiringKeys();
  let nextSeq = 0;
  let nextToken = 0;
  let pending = 0;
  /** Places taken by enqueues whose journal append is under way. */
  let reserved = 0;
  let inflight = 0;
  let closed = false;
  // One timer for the whole pool, set for the earliest due session.
  const timer = new WakeTimer(onTimer, now);

  /** Every claim in flight, in no order: what `sessions()` lists, bounded by the global limit. */
  const running: Claim[] = [];

  const byHeadAge = (a: Session, b: Session) => a.headSeq < b.headSeq;
  const bySeq = (a: Entry, b: Entry) => a.seq < b.seq;
  function tenantSlots(id: string): TenantSlots {
    let tenant = tenants.get(id);
    if (tenant === undefined) {
      tenant = {
        share: defaultTenantShare(id),
        inflight: 0,
        pending: 0,
        reserved: 0,
        usedMs: 0,
        claimedAtSum: 0,
        pass: virtualTime,
      };
      tenants.set(id, tenant);
    }
    return tenant;
  }
  /** Puts `shares` in force; a tenant left out gets the default share (its counts stay). */
  function applyShares(shares: readonly TenantShare[]): void {
    const given = new Map(shares.map((share) => [share.id, share]));
    for (const [id, tenant] of tenants) tenant.share = given.get(id) ?? defaultTenantShare(id);
    for (const share of shares) tenantSlots(share.id).share = share;
  }
  applyShares(options.tenants ?? []);
  const slotsFor = (policy: PoolPipelinePolicy): PipelineSlots => ({
    policy,
    tenant: tenantSlots(policy.tenant ?? DEFAULT_TENANT),
    inflight: 0,
    ready: new IndexedHeap(byHeadAge),
    waiting: new IndexedHeap(bySeq),
  });
  for (const policy of options.pipelines) pipelines.set(policy.id, slotsFor(policy));

  /** Whether `slots` may take a turn now: a free slot of its own and one of its tenant's. */
  const hasSlot = (slots: PipelineSlots) =>
    slots.inflight < slots.policy.maxConcurrency && slots.tenant.inflight < slots.tenant.share.maxConcurrency;
  /** When the tenant's next turn starts in virtual time: a tenant back from idle saved no credit. */
  const startOf = (tenant: TenantSlots) => Math.max(tenant.pass, virtualTime);
  /** The slot time `tenant` has used by `at`, for its weight. */
  const usageOf = (tenant: TenantSlots, at: number) =>
    (tenant.usedMs + tenant.inflight * at - tenant.claimedAtSum) / tenant.share.weight;

  /** Counts a message of `tenant` waiting; a tenant back from idle saved no slot time while away. */
  function addPending(tenant: TenantSlots, count: number, at: number): void {
    if (tenant.pending === 0 && tenant.inflight === 0) {
      const behind = fairTime - usageOf(tenant, at);
      if (behind > 0) tenant.usedMs += behind * tenant.share.weight;
    }
    tenant.pending += count;
  }

  function slotsOf(pipeline: string): PipelineSlots {
    let slots = pipelines.get(pipeline);
    if (slots === undefined) {
      slots = slotsFor(fallbackPolicy(pipeline));
      pipelines.set(pipeline, slots);
    }
    return slots;
  }

  /** Whether a claim would succeed now: a free global slot, and a ready session whose pipeline has one. */
  function claimable(): boolean {
    if (inflight >= concurrency.global) return false;
    for (const slots of readyPipelines) {
      if (hasSlot(slots)) return true;
    }
    return false;
  }

  /**
   * Wakes the listeners when a claim would succeed. Waking them on every arrival and completion
   * regardless started a claim loop per turn that found nothing
   * (bench/HISTORY.md#tuning-pass-4-counted-costs).
   */
  function notify(): void {
    if (!claimable()) return;
    for (const listener of listeners) listener();
  }

  /**
   * The head run: consecutive messages at the head for the same pipeline and sender, at most
   * `maxMessages` (LangBot merges other senders in; we end the run there, docs/design.md §2).
   * Returns its length and whether it can still grow.
   */
  function headRun(session: Session, maxMessages: number): { length: number; open: boolean; lastAt: number } {
    const head = session.queue.peek() as Entry;
    let length = 0;
    let lastAt = head.queued.acceptedAt;
    for (; length < maxMessages; length++) {
      const entry = session.queue.at(length);
      if (entry === undefined) return { length, open: true, lastAt };
      if (
        entry.queued.pipeline !== head.queued.pipeline ||
        entry.queued.message.sender.id !== head.queued.message.sender.id
      ) {
        return { length, open: false, lastAt };
      }
      lastAt = entry.queued.acceptedAt;
    }
    return { length, open: false, lastAt };
  }

  /** When the session's head may run: backoff first, then the debounce of its pipeline. */
  function dueAtOf(session: Session): number {
    const head = session.queue.peek() as Entry;
    if (head.queued.retryAtMs !== undefined) return head.queued.retryAtMs;
    const { aggregation } = head.slots.policy;
    if (!aggregation.enabled || head.queued.attempt > 0) return 0;
    const run = headRun(session, aggregation.maxMessages);
    if (!run.open) return 0;
    return Math.min(run.lastAt + aggregation.delayMs, head.queued.acceptedAt + aggregation.maxWaitMs);
  }

  /** Takes the session out of the heap holding it. */
  function unplace(session: Session): void {
    session.heap?.remove(session);
    session.heap = null;
    const { readyIn } = session;
    if (readyIn === null) return;
    session.readyIn = null;
    if (readyIn.ready.size === 0) readyPipelines.delete(readyIn);
  }

  /** Puts the session in the heap its state calls for, or forgets it when it is idle. */
  function place(session: Session, at: number): void {
    unplace(session);
    const head = session.queue.peek();
    if (head === undefined) {
      if (session.claims.length === 0) sessions.delete(session.key);
      return;
    }
    if (session.claims.length >= concurrency.perSession) return;
    session.headSeq = head.seq;
    session.dueAt = dueAtOf(session);
    if (session.dueAt > at) {
      session.heap = delayed;
      delayed.push(session);
      armTimer();
      return;
    }
    session.heap = head.slots.ready;
    session.heap.push(session);
    session.readyIn = head.slots;
    readyPipelines.add(head.slots);
  }

  function promoteDue(at: number): void {
    for (let top = delayed.peek(); top !== undefined && top.dueAt <= at; top = delayed.peek()) {
      place(top, at);
    }
  }

  function armTimer(): void {
    timer.arm(delayed.peek()?.dueAt ?? Number.POSITIVE_INFINITY);
  }

  function onTimer(): void {
    promoteDue(now());
    armTimer();
    notify();
  }

  function sessionFor(key: string): Session {
    let session = sessions.get(key);
    if (session === undefined) {
      session = {
        key,
        queue: new Fifo(),
        claims: [],
        headSeq: 0,
        dueAt: 0,
        heap: null,
        readyIn: null,
        heapIndex: -1,
      };
      sessions.set(key, session);
    }
    return session;
  }

  /**
   * Adds an already journaled message; returns the messages it pushed out of a session holding
   * `sessionCap` already.
   */
  function insert(queued: QueuedMessage, sessionCap: number): QueuedMessage[] {
    const session = sessionFor(queued.session);
    const overflowed: QueuedMessage[] = [];
    while (session.queue.length >= sessionCap) {
      const dropped = session.queue.shift() as Entry;
      dropped.slots.waiting.remove(dropped);
      dropped.slots.tenant.pending -= 1;
      overflowed.push(dropped.queued);
      pending -= 1;
    }
    const wasEmpty = session.queue.length === 0;
    const entry: Entry = { queued, seq: nextSeq++, slots: slotsOf(queued.pipeline), heapIndex: -1 };
    session.queue.push(entry);
    entry.slots.waiting.push(entry);
    addPending(entry.slots.tenant, 1, now());
    pending += 1;
    // A ready session with an unchanged head stays where it is: the common case costs O(1).
    if (wasEmpty || overflowed.length > 0 || session.heap === delayed) place(session, now());
    return overflowed;
  }

  /** Frees the turn's slots; returns its claim, or undefined when the turn is not in flight. */
  function release(turn: Turn): Claim | undefined {
    const linked = LinkedTurn.claimOf(turn);
    const session = linked?.pool === pool ? linked.session : sessions.get(turn.session);
    const claims = session?.claims ?? [];
    // A handed-out turn is matched by its claim, a copy by its lease token, never by its id: the
    // same messages claimed again make the same id, and a stale turn must not release their new
    // claim.
    const matches = (claim: Claim) =>
      linked?.pool === pool ? claim === linked : claim.token === turn.lease?.token;
    let index = 0;
    while (index < claims.length && !matches(claims[index] as Claim)) index++;
    const claim = claims[index];
    if (claim === undefined) return undefined;
    // A session's claims are unordered: the last one takes the freed place (so in `running`).
    claims[index] = claims[claims.length - 1] as Claim;
    claims.pop();
    const moved = running[running.length - 1] as Claim;
    running[claim.runningIndex] = moved;
    moved.runningIndex = claim.runningIndex;
    running.pop();
    claim.slots.inflight -= 1;
    const { tenant } = claim;
    tenant.inflight -= 1;
    tenant.usedMs += now() - claim.claimedAt;
    tenant.claimedAtSum -= claim.claimedAt;
    inflight -= 1;
    return claim;
  }

  /**
   * Takes a runnable turn: of the pipelines with a free slot (theirs and their tenant's), the one
   * whose tenant has used the least slot time for its weight — a tenant of quick turns is not
   * charged like one of slow turns — then whose tenant starts first in fair-queuing time (turns
   * for the weight: claims in one instant), then whose head is oldest; undefined when nothing may
   * run now.
   */
  function claimNext(): LinkedTurn | undefined {
    if (inflight >= concurrency.global) return undefined;
    const at = now();
    promoteDue(at);
    let best: PipelineSlots | undefined;
    let bestLoad = 0;
    let bestStart = 0;
    let bestHead = 0;
    for (const slots of readyPipelines) {
      const top = slots.ready.peek();
      if (top === undefined || !hasSlot(slots)) continue;
      const load = usageOf(slots.tenant, at);
      const start = startOf(slots.tenant);
      if (
        best === undefined ||
        load < bestLoad ||
        (load === bestLoad && (start < bestStart || (start === bestStart && top.headSeq < bestHead)))
      ) {
        best = slots;
        bestLoad = load;
        bestStart = start;
        bestHead = top.headSeq;
      }
    }
    if (best === undefined) return undefined;
    const { tenant } = best;
    virtualTime = bestStart;
    fairTime = Math.max(fairTime, bestLoad);
    tenant.pass = bestStart + 1 / tenant.share.weight;
    const session = best.ready.pop() as Session;
    session.heap = null;
    session.readyIn = null;
    if (best.ready.size === 0) readyPipelines.delete(best);
    const { aggregation, busyMode } = best.policy;
    const batchSize =
      aggregation.enabled || busyMode === 'collect' ? headRun(session, aggregation.maxMessages).length : 1;
    const entries: Entry[] = [];
    const messages: QueuedMessage[] = [];
    const requestIds: string[] = [];
    let attempt = 0;
    for (let i = 0; i < batchSize; i++) {
      const entry = session.queue.shift() as Entry;
      best.waiting.remove(entry);
      entry.slots.tenant.pending -= 1;
      entry.queued.attempt += 1;
      attempt = Math.max(attempt, entry.queued.attempt);
      entries.push(entry);
      messages.push(entry.queued);
      requestIds.push(requestIdOf(entry.queued));
    }
    pending -= batchSize;
    best.inflight += 1;
    tenant.inflight += 1;
    tenant.claimedAtSum += at;
    inflight += 1;
    const token = String(nextToken++);
    const turnId = turnIdOf(requestIds);
    const claim: Claim = {
      pool,
      token,
      session,
      slots: best,
      tenant,
      entries,
      turnId,
      claimedAt: at,
      runningIndex: running.length,
    };
    session.claims.push(claim);
    running.push(claim);
    place(session, at);
    const lease: TurnLease = { token, expiresAt: null };
    const turn = new LinkedTurn(turnId, session.key, best.policy.id, messages, attempt, lease, claim);
    turn.more = claimable();
    return turn;
  }

  /** Claims a turn and journals its start (behind, see `claim`). */
  function take(): LinkedTurn | undefined {
    const turn = claimNext();
    if (turn !== undefined && journal !== undefined)
      writeBehind(crashAfter('claim.after-attempt-mark', markStarted(journal, turn.messages)), 'turn start');
    return turn;
  }

  /**
   * After a settlement: hands the caller's next turn over when it asked for one, then wakes the
   * listeners if still more may run (asked first, they would take that turn).
   */
  function settled(options: SettleOptions | undefined): void {
    if (options?.claimNext !== undefined) {
      const next = take();
      if (next !== undefined) options.claimNext(next);
    }
    notify();
  }

  /** Puts a released claim's `entries` back at the head of its session. */
  function putBack(claim: Claim, entries: readonly Entry[]): void {
    claim.session.queue.unshiftAll(entries);
    const at = now();
    for (const entry of entries) {
      entry.slots.waiting.push(entry);
      addPending(entry.slots.tenant, 1, at);
    }
    pending += entries.length;
    place(claim.session, at);
  }

  const idsOf = (entries: readonly Entry[]) => entries.map((entry) => entry.queued.message.id);

  function writeBehind(write: Promise<void>, what: string): void {
    write.catch((err: unknown) =>
      logger.error({ err }, `journal ${what} failed: the message may run again after a restart`),
    );
  }

  /**
   * Journals the messages' current attempt: one write per attempt number, all issued now so that
   * they precede the turn's removal.
   */
  function markStarted(journal: Journal, messages: readonly QueuedMessage[]): Promise<void> {
    const byAttempt = new Map<number, string[]>();
    for (const queued of messages) {
      const ids = byAttempt.get(queued.attempt) ?? [];
      ids.push(queued.message.id);
      byAttempt.set(queued.attempt, ids);
    }
    const writes = [...byAttempt].map(([attempt, ids]) => journal.markStarted(ids, attempt));
    return Promise.all(writes).then(() => undefined);
  }

  const pool: QueryPool = {
    durable: journal !== undefined,

    async reconfigure(shared) {
      concurrency = shared.concurrency;
      limits = shared.limits;
      applyShares(shared.tenants ?? []);
      for (const policy of shared.pipelines) {
        const slots = pipelines.get(policy.id);
        if (slots === undefined) {
          pipelines.set(policy.id, slotsFor(policy));
          continue;
        }
        slots.policy = policy;
        const tenant = tenantSlots(policy.tenant ?? DEFAULT_TENANT);
        if (tenant !== slots.tenant) {
          // Its waiting messages move to the new tenant; its running turns stay counted where they
          // were claimed (`Claim.tenant`).
          slots.tenant.pending -= slots.waiting.size;
          if (slots.waiting.size > 0) addPending(tenant, slots.waiting.size, now());
          slots.tenant = tenant;
        }
      }
      // Raised limits may let waiting sessions run now.
      notify();
    },

    async enqueue(queued, delivery, options): Promise<EnqueueResult> {
      // Refusals come before the delivery key is marked: a refused delivery stays unseen. A last
      // delivery is kept past the bound, and by a journal while draining (see the port).
      const last = options?.last === true;
      if (closed && !(last && journal !== undefined)) {
        return { accepted: false, reason: 'draining', retryAfterMs: refusalRetryAfterMs };
      }
      const { tenant } = slotsOf(queued.pipeline);
      if (
        !last &&
        (pending + reserved >= limits.maxPending ||
          tenant.pending + tenant.reserved >= tenant.share.maxPending)
      ) {
        return { accepted: false, reason: 'queue_full', retryAfterMs: refusalRetryAfterMs };
      }
      if (journal !== undefined) {
        // The place is taken before the write: checked now and taken after it, the enqueues
        // awaiting their appends together would all pass the check and overshoot the bound.
        reserved += 1;
        tenant.reserved += 1;
        let appended: AppendResult;
        try {
          appended = await journal.append(queued, delivery);
        } finally {
          reserved -= 1;
          tenant.reserved -= 1;
        }
        if (appended === 'duplicate') return DUPLICATE;
      } else if (delivery !== undefined && !seenDeliveries.add(delivery.key, delivery.ttlMs, now())) {
        return DUPLICATE;
      }
      // From here on nothing may reject: the message is journaled and its sender is about to be
      // told so. The removal of the messages it pushed out goes behind, issued in this tick like
      // the caller's record of their outcome (`recordOverflowed`, also this tick), so both land
      // in one group commit: a kill leaves the dropped message journaled and unrecorded, or
      // removed and recorded. A failed removal runs the message again after a restart.
      const overflowed = insert(queued, limits.maxPendingPerSession);
      if (journal !== undefined && overflowed.length > 0) {
        writeBehind(journal.remove(overflowed.map((dropped) => dropped.message.id)), 'removal');
      }
      notify();
      return { accepted: true, overflowed };
    },

    // Claim and complete answer at once, without an async function frame: they run once per turn
    // at full load. Their journal writes go
    // behind: a turn start or a removal lost in a crash only means one more run after the restart
    // (at least once), and waiting for each would put two commits on every message's path.
    claim(): Promise<ClaimedTurn | null> {
      const turn = take();
      return turn === undefined ? NO_TURN : Promise.resolve(turn);
    },

    complete(turn, _ended, options): Promise<Settlement> {
      const claim = release(turn);
      if (claim === undefined) return LOST;
      place(claim.session, now());
      if (journal !== undefined)
        writeBehind(
          crashAfter(
            'settle.after-complete',
            // Gone already with the write that stored and ended the answer: that write committed.
            options?.leftJournal === true ? Promise.resolve() : journal.remove(idsOf(claim.entries)),
          ),
          'removal',
        );
      settled(options);
      return SETTLED;
    },

    async retry(turn, delayMs, finalIds = [], _ended, options) {
      const claim = release(turn);
      if (claim === undefined) return 'lost';
      const retryAtMs = now() + delayMs;
      const final = new Set(finalIds);
      const retried = claim.entries.filter((entry) => !final.has(entry.queued.message.id));
      const done = claim.entries.filter((entry) => final.has(entry.queued.message.id));
      for (const entry of retried) entry.queued.retryAtMs = retryAtMs;
      putBack(claim, retried);
      // Written behind like turn starts: a retry time lost in a crash only lets the message run
      // early after the restart, and a lost removal runs it once more (at least once). Issued
      // before a next claim's turn start, which may be of the same messages.
      if (journal !== undefined && retried.length > 0)
        writeBehind(
          crashAfter('settle.after-retry', journal.markRetry(idsOf(retried), retryAtMs)),
          'retry time',
        );
      if (journal !== undefined && done.length > 0) writeBehind(journal.remove(idsOf(done)), 'removal');
      settled(options);
      return 'settled';
    },

    async abandon(turn, options = { ran: true }) {
      const claim = release(turn);
      if (claim === undefined) return 'lost';
      if (!options.ran) {
        for (const entry of claim.entries) entry.queued.attempt -= 1;
        // Written behind after the claim's own write, so the journal ends at the undone count.
        if (journal !== undefined) {
          const queued = claim.entries.map((entry) => entry.queued);
          writeBehind(markStarted(journal, queued), 'attempt undo');
        }
      }
      putBack(claim, claim.entries);
      notify();
      return 'settled';
    },

    onRunnable(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    // Only this process claims from this pool: a claim holds until it is settled, so no lease is
    // ever lost and there is nothing to tell.
    // A claim costs nothing here: nothing to save by claiming ahead.
    onClaimedAhead() {
      return () => {};
    },

    onLeaseLost() {
      return () => {};
    },

    close() {
      closed = true;
    },

    async takeAll() {
      const taken: QueuedMessage[] = [];
      for (const session of [...sessions.values()]) {
        unplace(session);
        for (const entry of session.queue.drain()) taken.push(entry.queued);
        if (session.claims.length === 0) sessions.delete(session.key);
      }
      for (const slots of pipelines.values()) slots.waiting = new IndexedHeap(bySeq);
      for (const tenant of tenants.values()) tenant.pending = 0;
      pending = 0;
      timer.cancel();
      return taken;
    },

    async stats(): Promise<PoolStats> {
      const at = now();
      const inflightByPipeline: Record<string, number> = {};
      const pendingByPipeline: Record<string, number> = {};
      const oldestWaitMsByPipeline: Record<string, number> = {};
      for (const [id, slots] of pipelines) {
        inflightByPipeline[id] = slots.inflight;
        pendingByPipeline[id] = slots.waiting.size;
        const oldest = slots.waiting.peek();
        oldestWaitMsByPipeline[id] = oldest === undefined ? 0 : Math.max(0, at - oldest.queued.acceptedAt);
      }
      return {
        pending,
        inflight,
        sessions: sessions.size,
        inflightByPipeline,
        pendingByPipeline,
        oldestWaitMsByPipeline,
      };
    },

    seen(deliveryKey) {
      // With a journal the journal marks delivery keys (in the write that journals the message).
      if (journal !== undefined) return journal.seen(deliveryKey);
      return Promise.resolve(seenDeliveries.has(deliveryKey, now()));
    },

    async sessions(limit, only): Promise<SessionsView> {
      const at = now();
      const ready: Session[] = [];
      const listed = only === undefined ? pipelines.values() : only.map((id) => pipelines.get(id));
      for (const slots of listed) if (slots !== undefined) ready.push(...slots.ready.first(limit));
      ready.sort((a, b) => a.headSeq - b.headSeq);
      const waiting = ready.slice(0, limit).map((session) => {
        const head = (session.queue.peek() as Entry).queued;
        return {
          session: session.key,
          pipeline: head.pipeline,
          pending: session.queue.length,
          oldestWaitMs: Math.max(0, at - head.acceptedAt),
        };
      });
      const turns: RunningTurn[] = [...running]
        .sort((a, b) => a.claimedAt - b.claimedAt)
        .map((claim) => ({
          turnId: claim.turnId,
          session: claim.session.key,
          pipeline: claim.slots.policy.id,
          messages: claim.entries.length,
          ageMs: Math.max(0, at - claim.claimedAt),
          replica: null,
          pending: claim.session.queue.length,
        }));
      return { waiting, running: turns };
    },

    async recover() {
      if (journal === undefined) return [];
      const entries = await journal.load();
      // Everything journaled was accepted once: no cap may drop it now. An answered message is
      // not run again: its delivery in the outbox sends the stored answer and ends it; run again,
      // it could end a second time (a failure, another merge) while that answer is sent.
      for (const queued of entries) {
        if (queued.answered !== true) insert(queued, Number.POSITIVE_INFINITY);
      }
      notify();
      return entries;
    },
  };
  return pool;
}
