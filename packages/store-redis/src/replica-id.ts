import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/** A replica's name in leases, heartbeats and claims when none is given: `<hostname>:<pid>:<random>`. */
export function defaultReplicaId(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}
