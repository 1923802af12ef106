import type { Config } from '@switchboard/config';
import type { Logger, OutcomeBus, QueryPool } from '@switchboard/core';
import type { Channels } from './channels.js';
import type { Pipelines } from './pipelines.js';
import type { FleetFollower } from './reload/fleet-config.js';
import type { HttpServerShutdown } from '@switchboard/http';
import type { RedisKeptOutcomes } from '@switchboard/store-redis';
import type { FastifyInstance } from 'fastify';
import { recoverKeptOutcome } from './kept-outcomes.js';
import type { Handoffs } from './handoffs.js';
import type { Retention } from './retention.js';
import type { Scheduling } from './scheduling.js';
import type { Stores } from './stores.js';

/** The parts of a gateway that start and stop. */
export interface GatewayParts {
  config: Config;
  logger: Logger;
  stores: Stores;
  pool: QueryPool;
  outcomes: OutcomeBus;
  /** With a shared store: the outcomes settlements kept until their records are stored. */
  keptOutcomes: RedisKeptOutcomes | undefined;
  pipelines: Pipelines;
  channels: Channels;
  scheduling: Scheduling;
  retention: Retention;
  /** Ends idle handoffs. */
  handoffs: Handoffs;
  server: FastifyInstance;
  httpShutdown: HttpServerShutdown;
  /** With replicas: follows the fleet's configuration version. */
  fleet: FleetFollower | undefined;
}

/** Recovers the journal, starts channels and the controller, and listens. Returns the bound address. */
export async function startGateway(parts: GatewayParts): Promise<string> {
  const { config, logger, channels, scheduling } = parts;
  const recovered = await parts.pool.recover();
  if (recovered.length > 0) logger.info({ recovered: recovered.length }, 'journal recovered');
  parts.retention.start();
  parts.handoffs.start();
  await channels.start({ ingress: scheduling.ingress, logger, recovered });
  scheduling.controller.start();
  scheduling.sender.start();
  await parts.fleet?.start();
  // Outcomes whose settling replica died before recording them are recorded here.
  parts.keptOutcomes?.start(recoverKeptOutcome(config, parts.outcomes));
  const address = await parts.server.listen({ host: config.server.host, port: config.server.port });
  logger.info({ address, channels: [...channels.adapters.keys()], store: config.store.kind }, 'listening');
  return address;
}

/**
 * Drains and closes everything (docs/design.md §2 "Shutdown"), within `shutdown.drain_timeout`
 * from the call. The caller has marked the gateway draining for `/readyz` already.
 */
export async function stopGateway(parts: GatewayParts): Promise<void> {
  const { config, logger, channels, scheduling, pipelines } = parts;
  const { drainTimeoutMs } = config.shutdown;
  // One deadline for the whole stop: the container's stop grace counts from the signal.
  const deadline = Date.now() + drainTimeoutMs;
  // First: an outcome recovered from here on would reach no status writer once the channels
  // stop. Those it leaves are another replica's once their lease ends.
  parts.keptOutcomes?.stopRecovering();
  parts.fleet?.stop();
  logger.info({ drainTimeoutMs }, 'draining');
  parts.httpShutdown.drain();
  channels.drain();
  // An idle handoff ended now would queue its turn in a pool that no longer starts turns.
  await parts.handoffs.stop();
  await scheduling.controller.stop({ drainTimeoutMs });
  // Replies of the turns that finished in the drain went out meanwhile; now the sender stops
  // claiming, and its sends under way get what is left of the drain.
  await scheduling.sender.stop({ drainTimeoutMs: Math.max(0, deadline - Date.now()) });
  // Nothing adds replies any more: what an outbox in memory still holds is dropped.
  await scheduling.sender.dropUnsent();
  // After the drain no turn runs: worker processes get what is left of the drain to exit.
  await pipelines.stop(Math.max(0, deadline - Date.now()));
  await channels.stop();
  parts.retention.stop();
  await parts.httpShutdown.close(deadline - Date.now());
  await parts.stores.close();
  logger.info({}, 'stopped');
}
