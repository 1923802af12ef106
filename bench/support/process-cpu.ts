import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** `/proc`'s CPU times count ticks of USER_HZ, 100 a second on Linux. */
const MS_PER_TICK = 1000 / 100;

/** CPU time a process has used so far, ms: in all, and of it in the kernel (system calls). */
export interface CpuTimes {
  totalMs: number;
  systemMs: number;
}

/**
 * CPU time (user + system) a process has used so far, from `/proc/<pid>/stat`; null where there
 * is no procfs. It shows whether a server was saturated (a server the client cannot keep busy
 * uses less CPU than its run lasted), and the system part how much went to system calls.
 */
export function cpuTimesMs(pid: number | undefined): CpuTimes | null {
  if (pid === undefined) return null;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Fields after the parenthesized command name; utime and stime are the 12th and 13th of them.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const userMs = Number(fields[11]) * MS_PER_TICK;
  const systemMs = Number(fields[12]) * MS_PER_TICK;
  return { totalMs: userMs + systemMs, systemMs };
}

/** `cpuTimesMs`'s total alone. */
export function cpuTimeMs(pid: number | undefined): number | null {
  return cpuTimesMs(pid)?.totalMs ?? null;
}

/** The machine's CPU time so far over all its cores, ms: busy (neither idle nor waiting on I/O) and in all. */
export interface MachineCpuTimes {
  busyMs: number;
  totalMs: number;
}

/**
 * The machine's CPU time from the first line of `/proc/stat` (every process, the kernel's own work
 * and time stolen by the hypervisor included; waits on I/O count as idle); null where there is no
 * procfs. A run's busy ÷ total is how much of the cores it left idle: on a machine shared by the
 * gateways, Redis, PostgreSQL and the load generator, no one process need be at its ceiling for
 * the machine to be.
 */
export function machineCpuMs(): MachineCpuTimes | null {
  let stat: string;
  try {
    stat = readFileSync('/proc/stat', 'utf8');
  } catch {
    return null;
  }
  // cpu user nice system idle iowait irq softirq steal … (guest time is in user and nice already).
  const ticks = (stat.split('\n')[0] ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
  const totalMs = ticks.reduce((a, b) => a + b, 0) * MS_PER_TICK;
  const idleMs = ((ticks[3] ?? 0) + (ticks[4] ?? 0)) * MS_PER_TICK;
  return { busyMs: totalMs - idleMs, totalMs };
}

/** The cores busy between two `machineCpuMs` readings (busy ÷ all ticks × cores); null without either. */
export function busyCoresBetween(
  before: MachineCpuTimes | null,
  after: MachineCpuTimes | null,
): number | null {
  if (before === null || after === null) return null;
  return ((after.busyMs - before.busyMs) / (after.totalMs - before.totalMs)) * cpus().length;
}
