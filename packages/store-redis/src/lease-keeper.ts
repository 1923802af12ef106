import type { Logger, TurnLease } from '@switchboard/core';

/** What one renewal call answers: the tokens no longer held, and the deadline the others got. */
export interface Renewal {
  lost: string[];
  expiresAt: number;
}

export interface LeaseKeeperOptions {
  /**
   * Renews the given tokens (and this replica's heartbeat) in one call; `fenceAt` (on `now()`'s
   * clock) is when this replica gives them up unless a renewal succeeds first: the store must
   * not extend them for a call it applies later.
   */
  renew(tokens: string[], fenceAt: number): Promise<Renewal>;
  /** Told once per token this replica claimed and no longer holds. */
  onLost(token: string): void;
  now(): number;
  renewEveryMs: number;
  /** Without a successful renewal for this long, the replica gives up all its turns itself. */
  fenceAfterMs: number;
  logger: Logger;
}

/** The longest wait before a failed renewal round is tried again, ms. */
const RETRY_AFTER_FAILURE_MAX_MS = 1000;

/**
 * This replica's leases (docs/design.md §5): all of them renewed in one call every
 * `renewEveryMs`; a token the store no longer holds for it, and every token once no renewal has
 * succeeded for `fenceAfterMs`, is given up (`onLost`). Fencing stops a turn this replica can no
 * longer vouch for before its lease expires and another replica runs the same messages.
 */
export class LeaseKeeper {
  readonly #options: LeaseKeeperOptions;
  readonly #held = new Map<string, TurnLease>();
  readonly #timer: NodeJS.Timeout;
  #lastRenewedAt: number;
  #renewing = false;
  #retry: NodeJS.Timeout | undefined;

  constructor(options: LeaseKeeperOptions) {
    this.#options = options;
    this.#lastRenewedAt = options.now();
    this.#timer = setInterval(() => this.#tick(), options.renewEveryMs);
    this.#timer.unref();
  }

  /** Starts renewing a claim's lease; its `expiresAt` follows each renewal. */
  hold(lease: TurnLease): void {
    this.#held.set(lease.token, lease);
  }

  /** How many leases this replica holds. */
  get size(): number {
    return this.#held.size;
  }

  /** Whether `token` is still renewed: claimed here, not yet settled nor given up. */
  holds(token: string): boolean {
    return this.#held.has(token);
  }

  /**
   * Stops renewing `token`: the store answered its settlement. A settlement that failed keeps
   * its lease renewed while the caller writes it again, until renewals fail for `fenceAfterMs`.
   */
  release(token: string): void {
    this.#held.delete(token);
  }

  /**
   * Fences first, whether or not a round is on its way: a renewal that hangs (a client without a
   * command timeout) must not hold fencing back until after the leases expired.
   */
  #tick(): void {
    this.#fenceIfOverdue();
    void this.renewNow();
  }

  /** One renewal round; skipped while the previous one is still on its way. */
  async renewNow(): Promise<void> {
    if (this.#renewing) return;
    this.#renewing = true;
    const startedAt = this.#options.now();
    try {
      const { lost, expiresAt } = await this.#options.renew(
        [...this.#held.keys()],
        this.#lastRenewedAt + this.#options.fenceAfterMs,
      );
      this.#lastRenewedAt = startedAt;
      const gone = new Set(lost);
      for (const [token, lease] of this.#held) {
        if (!gone.has(token)) lease.expiresAt = expiresAt;
      }
      for (const token of lost) this.#giveUp(token);
    } catch (err) {
      if (!this.#fenceIfOverdue(err)) {
        this.#options.logger.warn(
          { err, silentMs: this.#options.now() - this.#lastRenewedAt, turns: this.#held.size },
          'lease renewal failed: retrying',
        );
        this.#retrySoon();
      }
    } finally {
      this.#renewing = false;
    }
  }

  /**
   * Tries a failed round again within a fraction of the period, not a whole one later: with
   * renewals every 5 s and fencing at 10 s, the next tick would already be the fencing one, so a
   * single failed call (a stall past a `WAIT`'s timeout) would cost every turn.
   */
  #retrySoon(): void {
    if (this.#retry !== undefined) return;
    const inMs = Math.min(RETRY_AFTER_FAILURE_MAX_MS, this.#options.renewEveryMs / 4);
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#tick();
    }, inMs);
    this.#retry.unref();
  }

  /** Stops renewing and gives up every lease still held (the replica shuts down). */
  stop(): void {
    clearInterval(this.#timer);
    clearTimeout(this.#retry);
    this.#giveUpAll();
  }

  /** Gives up every lease held now (`onLost` for each); renewals go on for later claims. */
  giveUpAll(): void {
    this.#giveUpAll();
  }

  /** Gives up every turn once no renewal has succeeded for `fenceAfterMs`; says whether it is that late. */
  #fenceIfOverdue(err?: unknown): boolean {
    const silentMs = this.#options.now() - this.#lastRenewedAt;
    if (silentMs < this.#options.fenceAfterMs) return false;
    if (this.#held.size === 0) return true;
    this.#options.logger.error(
      { err, silentMs, turns: this.#held.size },
      "lease lost: no renewal for too long, giving up this replica's turns",
    );
    this.#giveUpAll();
    return true;
  }

  #giveUpAll(): void {
    for (const token of [...this.#held.keys()]) this.#giveUp(token);
  }

  #giveUp(token: string): void {
    // A token settled while the renewal was on its way is no longer held here: nothing to tell.
    if (!this.#held.delete(token)) return;
    this.#options.onLost(token);
  }
}
