import { metricValueAt } from '@switchboard/testkit/prometheus';
import type autocannon from 'autocannon';
import { loadMessages } from './http-load.js';
import { type CpuTimes, cpuTimesMs } from './process-cpu.js';
import type { ServerProcess } from './server-process.js';
import { SETTINGS } from './settings.js';

/** CPU ms of every replica so far, summed, in all and in the kernel; null when any is unreadable. */
export function replicasCpuMs(replicas: readonly ServerProcess[]): CpuTimes | null {
  const total = { totalMs: 0, systemMs: 0 };
  for (const replica of replicas) {
    const times = cpuTimesMs(replica.child.pid);
    if (times === null) return null;
    total.totalMs += times.totalMs;
    total.systemMs += times.systemMs;
  }
  return total;
}

/** Outcomes every replica has recorded so far, summed (each message's is recorded once, where it ran). */
export async function outcomesRecorded(replicas: readonly ServerProcess[]): Promise<number> {
  const counts = await Promise.all(
    replicas.map((replica) => metricValueAt(replica.url, 'switchboard_messages_total')),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/**
 * Loads every replica at once, SETTINGS.httpConnections split evenly (one autocannon per replica,
 * as a round-robin load balancer would spread them); resolves each client's result and the wall time.
 */
export async function loadAll(replicas: readonly ServerProcess[], durationS: number) {
  const connections = (index: number) =>
    Math.floor(SETTINGS.httpConnections / replicas.length) +
    (index < SETTINGS.httpConnections % replicas.length ? 1 : 0);
  const startedAt = performance.now();
  const results: autocannon.Result[] = await Promise.all(
    replicas.map((replica, index) => loadMessages(replica.url, { durationS }, connections(index))),
  );
  return { results, wallMs: performance.now() - startedAt };
}

/**
 * Loads each replica in turn, alone, with SETTINGS.httpConnections until it answered `messages`
 * (the other replicas of its pool may run some of them): every gateway of a setup then runs warm
 * in its measured run, however few messages its share of the setup's load would have brought it
 * in a warm-up of fixed length.
 */
export async function warmUpEach(replicas: readonly ServerProcess[], messages: number): Promise<void> {
  for (const replica of replicas) await loadMessages(replica.url, { messages }, SETTINGS.httpConnections);
}
