import type { InboundMessage } from '../model/message.js';
import type { Outcome } from '../model/outcome.js';
import type { SessionKey } from '../model/session-key.js';
import type { QueuedMessage } from '../model/queued-message.js';
import type { AddAndClaimResult, Delivery } from './reply-outbox.js';
import type { Settlement } from './settlement.js';
import type { Concurrency, PoolPipelinePolicy, QueueLimits } from '../scheduling/pipeline-policy.js';
import type { TenantShare } from '../scheduling/tenant-share.js';

/**
 * A claim's hold on its turn. A shared pool hands a claim to one replica for a while and renews
 * it while the turn runs there; when the holder stops renewing (it died, or lost the store), the
 * lease expires and another replica reclaims the messages. Whoever then settles with the old
 * token is told `lost`.
 */
export interface TurnLease {
  /** Unique per claim: the same messages claimed again get the same turn id but a new token. */
  token: string;
  /**
   * Until when the claim holds, ms on the pool's clock; renewed by the pool while the turn runs.
   * Null on a pool that only this process uses: its claims cannot be taken over.
   */
  expiresAt: number | null;
}

/** A claimed unit of work: one or more messages of one session for one pipeline. */
export interface Turn {
  /**
   * Made from the request ids of its messages (`turnIdOf`, `requestIdOf`): the same messages get
   * the same id on every attempt, also after a restart, so a backend can deduplicate on it
   * (`Query.id`); a replayed dead letter is a new request and gets a new id.
   */
  id: string;
  session: SessionKey;
  pipeline: string;
  /** In arrival order; each `attempt` already counts this turn. */
  messages: QueuedMessage[];
  /** The highest attempt among the messages: 1 on a first run. Limits apply per message. */
  attempt: number;
  lease: TurnLease;
}

/** A turn as a claim hands it out, with what the pool saw right after taking it. */
export interface ClaimedTurn extends Turn {
  /**
   * Whether a further claim may succeed now: false lets the claim loop stop without a claim that
   * would find nothing (`onRunnable` tells when that changes). Exact on a pool of this process; a
   * shared pool answers what its store saw in the same atomic step as the claim.
   */
  more: boolean;
}

/** What a settlement (`complete`, `retry`) may do besides settling. */
export interface SettleOptions {
  /**
   * Claims the caller's next turn in the same step as a settlement that is `settled`, as `claim`
   * would (the slot just freed, or any other), and hands it here before the settlement resolves;
   * not called when nothing is claimable or the settlement is `lost`. A shared pool does both in
   * one round trip. A settlement repeated because its answer was lost hands over the turn its
   * first call claimed, never a second one.
   */
  claimNext?: (turn: ClaimedTurn) => void;
  /**
   * The turn's messages already left the journal, in the write that stored and ended its answer
   * (`ReplyOutbox.addEnded`): a pool with a journal writes no removal of its own, which would be
   * a commit of its own for rows already gone. A pool whose settlement is its own write ignores it.
   */
  leftJournal?: boolean;
  /**
   * Replies `complete` stores in the reply outbox in the settlement's own write (a pool that
   * `storesReplies`; others ignore it): stored exactly when the settlement is applied, so that no
   * crash leaves an answer stored for a turn that runs again, nor a turn completed without its
   * answer.
   */
  replies?: SettledReplies;
}

/** The delivery a settlement stores (`SettleOptions.replies`), and what its add hands back. */
export interface SettledReplies {
  delivery: Delivery;
  /**
   * Claims the delivery for this process's reply sender in the same write, at this time on the
   * outbox's clock, as `ReplyOutbox.addAndClaim` would; absent: claims none (no send is free).
   */
  claimAt?: number;
  /**
   * Called with what the add did and the claim it made before an applied settlement resolves. A
   * settlement repeated because its answer was lost answers `duplicate`: the claim the first call
   * may have made is the outbox's to hand back (its next claim repeats it).
   */
  stored(added: AddAndClaimResult): void;
}

/**
 * What a turn start says about its messages: which turn, which pipeline, and each message's id,
 * channel, tenant, generation (a dead letter's replay) and rule. A `Turn` is one; it is also all that crosses to other replicas
 * (docs/design.md §5 "Several replicas").
 */
export interface TurnStart {
  id: string;
  pipeline: string;
  messages: ReadonlyArray<{
    message: Pick<InboundMessage, 'id' | 'channel' | 'tenant' | 'generation' | 'accepted_by'>;
    rule?: string;
  }>;
}

/**
 * A delivery's redelivery key (`<channel>:<update_id>`, `replay:<auditId>`) and how long it is
 * remembered, in ms. Within that time a second enqueue with the same key is a duplicate.
 */
export interface DeliveryKey {
  key: string;
  ttlMs: number;
}

export type EnqueueResult =
  | {
      accepted: true;
      /** Older messages of the same session dropped to make room (`queue_overflow`). */
      overflowed: QueuedMessage[];
    }
  | { accepted: false; reason: 'queue_full' | 'draining'; retryAfterMs: number }
  /** The delivery key was already seen within its TTL: nothing was queued. */
  | { accepted: false; reason: 'duplicate' };

/**
 * Where a shared pool says a message stands (`QueryPool.locate`): waiting, in a running turn, or
 * `settled` — its outcome is final and its status is being stored by the replica that ran it.
 */
export interface PooledMessageState {
  state: 'queued' | 'running' | 'settled';
  pipeline: string;
  /** The channel that accepted it: a channel answers only for its own messages. */
  channel: string;
  /** Its tenant (`InboundMessage.tenant`, absent for `default`); unknown, so absent, once settled. */
  tenant?: string;
  /** The routing rule, unknown once settled. */
  rule: string | null;
}

export interface PoolStats {
  /** Messages waiting (not running). */
  pending: number;
  /** Turns running. */
  inflight: number;
  /** Sessions with something queued or running. */
  sessions: number;
  /** Turns running per pipeline. */
  inflightByPipeline: Record<string, number>;
  /**
   * Messages waiting per pipeline (queued, debounced or backing off; not running). Every
   * configured pipeline is listed, 0 when none waits.
   */
  pendingByPipeline: Record<string, number>;
  /**
   * Per pipeline, how long its oldest waiting message has waited since it was accepted, ms on the
   * pool's clock (a retried message keeps its age); 0 when none waits. Exact: each pool keeps
   * its waiting messages per pipeline in acceptance order, so this reads one entry.
   */
  oldestWaitMsByPipeline: Record<string, number>;
}

/** A session among the longest waiting (`QueryPool.sessions`). */
export interface WaitingSession {
  session: SessionKey;
  /** The pipeline of the session's head. */
  pipeline: string;
  /** Messages of the session waiting, whatever their pipeline. */
  pending: number;
  /** How long the head (the session's oldest waiting message) has waited since acceptance, ms. */
  oldestWaitMs: number;
}

/** A turn running now (`QueryPool.sessions`). */
export interface RunningTurn {
  turnId: string;
  session: SessionKey;
  pipeline: string;
  messages: number;
  /** Since the claim, ms on the pool's clock (a turn reclaimed by another replica counts anew). */
  ageMs: number;
  /** The replica whose claim it is; null on a pool that only this process uses. */
  replica: string | null;
  /** Messages of the same session waiting behind it. */
  pending: number;
}

/** What the pool's sessions are doing, for operators (`QueryPool.sessions`). */
export interface SessionsView {
  /**
   * The sessions whose heads are ready to run and have waited longest, oldest first: the order
   * in which claims take them within a tenant (read from the pool's ready ordering, so no scan of
   * the backlog); across tenants, claims go by their shares, and a tenant at its `concurrency`
   * takes none until one of its turns ends.
   * A session held back by debounce, backoff or its own running turn is not listed here; one
   * with a running turn shows under `running` with what waits behind it.
   */
  waiting: WaitingSession[];
  /** Every running turn, oldest claim first; bounded by the global concurrency limit. */
  running: RunningTurn[];
}

/**
 * The query pool (docs/design.md §2): per-session FIFO queues, a ready structure ordered by the age of
 * each session's head (oldest head first), debounce and backoff as readiness, and the slots —
 * a claim takes the session slot, then the pipeline slot, then the global slot, atomically, so
 * that a message waiting on its own session never holds a global slot.
 *
 * One controller works on a local or a shared pool unchanged: a claim carries a lease, settlement
 * answers whether the claim still held, and retry delays are relative to the pool's clock.
 *
 * Costs: enqueue, claim, complete and retry are O(log n) in the number of sessions; nothing
 * scans the backlog. Ordering: within a session, messages run in acceptance order, and a retried
 * turn goes back to the head keeping its age. Per-session state exists only while a session has
 * something queued or running.
 *
 * Implementations: in-memory (optionally writing through a `Journal`), and Redis (shared by
 * replicas, every transition one Lua script). Left out: running pipelines, timeouts and outcomes
 * — the controller owns those.
 */
/**
 * What a pool schedules by: its limits, each pipeline's slots and readiness rules, and the shares
 * of the tenants that configure one (a tenant not listed has `defaultTenantShare`).
 */
export interface PoolConfig {
  concurrency: Concurrency;
  limits: QueueLimits;
  pipelines: readonly PoolPipelinePolicy[];
  tenants?: readonly TenantShare[];
}

export interface QueryPool {
  /** True when accepted messages survive a restart (a journal or a shared store). */
  readonly durable: boolean;
  /**
   * True when `complete` stores `SettleOptions.replies` in its own write (a shared pool whose
   * outbox lives in the same store: one round trip instead of two). Absent: the caller stores
   * the replies first, then completes.
   */
  readonly storesReplies?: boolean;
  /**
   * Accepts a message (journaled before this resolves) or refuses it when the pool is full or
   * draining. A full session drops its oldest waiting message, returned in `overflowed`: the
   * caller records their outcome in the same tick as this resolves, so that a store committing
   * writes in groups commits the record with their removal. Once the message is journaled this
   * never rejects (a failed removal of the overflowed ones is only logged).
   *
   * With a `delivery` key the pool also deduplicates (docs/design.md §2 "Query pool"):
   * a key already seen answers `duplicate`. The key is marked in the same atomic write that
   * journals the message, so a crash leaves both or neither — a redelivery of a message that was
   * never journaled is accepted. A refused enqueue (full, draining) or a failed write leaves the
   * key unseen, so the platform's redelivery is judged again. Of concurrent enqueues with one key,
   * exactly one is accepted.
   *
   * `last`: the platform will not deliver this message again, so refusing it would lose it. A
   * durable pool then keeps it past `max_pending` and while draining (it runs after the next
   * start); a pool that is not durable only past `max_pending`. It is still deduplicated, so a
   * last delivery of a message already journaled is a `duplicate`, not a second message.
   *
   * A pool in another process (shared by replicas) may take a message and lose its answer. It
   * remembers each request it accepted (`requestIdOf`: the message id; a dead letter's replay is
   * another request) for a while, and an enqueue of it again answers that acceptance — its
   * `overflowed` too — and queues nothing, whatever the delivery key and the bounds say now; the
   * pool itself calls an unanswered enqueue again before it fails. A pool of this process answers
   * every enqueue it applied, and remembers nothing.
   */
  enqueue(
    message: QueuedMessage,
    delivery?: DeliveryKey,
    options?: { last?: boolean },
  ): Promise<EnqueueResult>;
  /**
   * Claims a runnable turn, or null when nothing may run now: of the tenants with a free slot
   * (their `concurrency`), the one that has used the least slot time for its weight (ties, as
   * claims in one instant: the fewest turns for its weight), then that tenant's turn whose head is
   * oldest (docs/design.md §10 "Fair shares"); with one tenant, the oldest head. A pool shared
   * by replicas holds the tenants' slots and slot time across all of them. The claim
   * counts an attempt for each of its messages: a turn whose messages exceed their pipeline's
   * `retry.max_attempts` (a message that killed the process each time it ran) is handed out all
   * the same, and the controller dead-letters it without running it. `more` on the turn tells
   * whether calling again may find another.
   */
  claim(): Promise<ClaimedTurn | null>;
  /**
   * Frees the turn's slots and forgets its messages (their outcome is final). `ended`: the
   * outcomes this settlement ends, which a pool shared by replicas keeps in the same atomic
   * write until their records are stored (`KeptOutcome`, docs/design.md §5 "Outcomes kept with
   * their settlement"); a pool of one process ignores them (its caller records them in the same
   * commit). `options.claimNext`: see `SettleOptions`.
   */
  complete(turn: Turn, ended?: readonly Outcome[], options?: SettleOptions): Promise<Settlement>;
  /**
   * Frees the turn's slots and puts its messages back at the head of their session, runnable
   * after `delayMs` on the pool's clock (kept by a durable pool across a restart), except those
   * in `finalIds`: their outcome is final (they reached their attempt limit) and they are
   * forgotten, as by `complete`; `ended` holds their outcomes, as for `complete`.
   * `options.claimNext`: see `SettleOptions`.
   */
  retry(
    turn: Turn,
    delayMs: number,
    finalIds?: readonly string[],
    ended?: readonly Outcome[],
    options?: SettleOptions,
  ): Promise<Settlement>;
  /**
   * Frees the turn's slots and puts its messages back at the head of their session, runnable at
   * once (a durable pool keeps them for the next start; a shared one for any replica). A turn
   * that ran (and was aborted) still counts as an attempt; one handed back without running
   * (`ran: false`, claimed after the stop) does not, so that shutdowns alone never use up a
   * message's attempts.
   */
  abandon(turn: Turn, options?: { ran: boolean }): Promise<Settlement>;
  /** Calls `listener` whenever a claim may now succeed (arrival, freed slot, due timer). */
  onRunnable(listener: () => void): () => void;
  /**
   * Lets the pool claim turns for this process ahead of a `claim`, in the same step as another
   * write this process makes (a shared pool's enqueue: one round trip instead of two), and hand
   * each to `taker`, which starts it as a claimed one. The controller registers while it runs
   * (one taker; registering replaces it); without a taker the pool claims nothing ahead, and a
   * turn claimed as the taker left is handed back unrun. A pool of this process, whose claims
   * cost no round trip, never claims ahead.
   */
  onClaimedAhead(taker: (turn: ClaimedTurn) => void): () => void;
  /**
   * Calls `listener` with the lease token of a turn this process claimed and no longer holds:
   * another replica reclaimed it, or the pool could not renew it in time and gave it up itself
   * (fencing: better to stop a turn than to run it twice at once). The caller aborts that turn
   * and settles nothing. A pool whose leases never expire never calls it.
   */
  onLeaseLost(listener: (token: string) => void): () => void;
  /**
   * Loads what the store kept from before this process started and makes it claimable; returns
   * the messages that came back. A journaled pool reloads its journal, and returns but does not
   * queue the messages journaled as answered (`QueuedMessage.answered`: their outcome comes with
   * their delivery); a shared pool keeps its messages in the store and returns none (a dead
   * replica's claims come back by lease expiry).
   */
  recover(): Promise<QueuedMessage[]>;
  /** Refuses further enqueues through this instance (`draining`); other replicas go on. */
  close(): void;
  /**
   * Puts new limits and pipeline policies in force (a reload): claims and enqueues from now on
   * follow them; turns running keep their slots. A pipeline left out keeps its queued messages
   * (claimed, they end `dead_lettered/pipeline_removed`). A shared pool stores them for every
   * replica: the others must reload the same (their claims and enqueues are refused meanwhile).
   */
  reconfigure(shared: PoolConfig): Promise<void>;
  /** Removes and returns every waiting message (shutdown of a pool that is not durable). */
  takeAll(): Promise<QueuedMessage[]>;
  stats(): Promise<PoolStats>;
  /**
   * The `limit` longest-waiting ready sessions and every running turn (`SessionsView`), for
   * operators (`GET /admin/sessions`). Costs O(pipelines × limit × log limit) plus the running
   * turns; a shared pool answers cluster-wide. `pipelines`: only the ready sessions of these (one
   * tenant's), so another tenant's backlog cannot push them out of the `limit`.
   */
  sessions(limit: number, pipelines?: readonly string[]): Promise<SessionsView>;
  /**
   * True when an enqueue marked `deliveryKey` (`DeliveryKey.key`) and its TTL has not run out:
   * an enqueue with it now would answer `duplicate`. Reads only. Ingress asks it when a quota
   * refuses a message (docs/design.md §10 "Quotas"), so that a redelivery of an accepted message
   * ends `duplicate` as the enqueue would have called it, not `dropped` a second time.
   */
  seen(deliveryKey: string): Promise<boolean>;
  /**
   * Where a message stands, for a replica asked about one another replica accepted (docs/design.md
   * §5 "Several replicas"); null when the pool does not hold it. A pool of one process leaves
   * this out: the process follows every message it accepted.
   */
  locate?(messageId: string): Promise<PooledMessageState | null>;
}
