import { OUTCOME_KINDS, type Outcome, type OutcomeKind, tenantOfMessage } from '@switchboard/core';

const MINUTE_MS = 60_000;
/** Minutes the ring covers: the overview's last hour. */
const MINUTES = 60;

/** Outcomes of one minute, by kind. */
export interface MinuteCounts {
  /** Start of the minute, ms since the epoch. */
  at: number;
  counts: Record<OutcomeKind, number>;
}

/** Messages per minute by outcome over the last hour, on this replica. */
export interface OutcomeRate {
  /** Counts one outcome: O(1), no allocation (past the first outcome of its tenant). */
  record(outcome: Outcome): void;
  /**
   * The last 60 minutes, oldest first, the current minute last; minutes without outcomes count 0.
   * With `tenant`, that tenant's messages only (`message.tenant`, absent = `default`).
   */
  lastHour(nowMs: number, tenant?: string): MinuteCounts[];
}

/**
 * One ring for every message and one per tenant: a tenant token's overview counts its own. The
 * tenants are those of the configuration (ingress stamps only those), so the rings are bounded.
 */
export function createOutcomeRate(): OutcomeRate {
  const all = createMinuteRing();
  const byTenant = new Map<string, MinuteRing>();
  return {
    record(outcome) {
      all.record(outcome);
      const tenant = tenantOfMessage(outcome.message);
      let ring = byTenant.get(tenant);
      if (ring === undefined) {
        ring = createMinuteRing();
        byTenant.set(tenant, ring);
      }
      ring.record(outcome);
    },
    lastHour(nowMs, tenant) {
      return (tenant === undefined ? all : (byTenant.get(tenant) ?? EMPTY)).lastHour(nowMs);
    },
  };
}

type MinuteRing = Pick<OutcomeRate, 'record'> & { lastHour(nowMs: number): MinuteCounts[] };

/**
 * A ring of 60 one-minute buckets fed by the outcome bus (docs/design.md §7 "Console"). A bucket
 * is cleared when its slot comes round again, so memory is fixed; counts are lost on restart.
 */
function createMinuteRing(): MinuteRing {
  const kinds = OUTCOME_KINDS.length;
  const kindIndex = new Map<OutcomeKind, number>(OUTCOME_KINDS.map((kind, index) => [kind, index]));
  const counts = new Uint32Array(MINUTES * kinds);
  // The minute (ms / 60 000) each slot currently counts; -1 for never.
  const minuteOf = new Float64Array(MINUTES).fill(-1);

  return {
    record(outcome) {
      const minute = Math.floor(outcome.at / MINUTE_MS);
      const slot = minute % MINUTES;
      if (minuteOf[slot] !== minute) {
        // An outcome older than the minute its slot holds now belongs to no bucket kept.
        if ((minuteOf[slot] ?? -1) > minute) return;
        counts.fill(0, slot * kinds, slot * kinds + kinds);
        minuteOf[slot] = minute;
      }
      counts[slot * kinds + (kindIndex.get(outcome.kind) ?? 0)]! += 1;
    },
    lastHour(nowMs) {
      const current = Math.floor(nowMs / MINUTE_MS);
      const minutes: MinuteCounts[] = [];
      for (let minute = current - MINUTES + 1; minute <= current; minute++) {
        const slot = minute % MINUTES;
        const kept = minuteOf[slot] === minute;
        const byKind = {} as Record<OutcomeKind, number>;
        for (const [index, kind] of OUTCOME_KINDS.entries()) {
          byKind[kind] = kept ? (counts[slot * kinds + index] ?? 0) : 0;
        }
        minutes.push({ at: minute * MINUTE_MS, counts: byKind });
      }
      return minutes;
    },
  };
}

/** The ring of a tenant without outcomes yet: zeros, never recorded into. */
const EMPTY = createMinuteRing();
