import type { ChannelAdapter, InboundMessage } from '@switchboard/core';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { capturingLogger } from './capturing-logger.js';
import { type ConformanceIngress, conformanceIngress } from './conformance-ingress.js';
import type { ChannelHarness, ChannelHarnessFactory, DeliveryAnswer } from './harness.js';

/** One check's world: the harness, a started adapter, its ingress and everything it logged. */
export interface ConformanceWorld {
  harness: ChannelHarness;
  adapter: ChannelAdapter;
  ingress: ConformanceIngress;
  logs: string[];
}

/**
 * Starts the harness once for a group of checks and, around each check, an adapter on it
 * with a fresh conformance ingress and capturing logger; returns the current world.
 */
export function useConformanceWorld(factory: ChannelHarnessFactory): () => ConformanceWorld {
  let harness: ChannelHarness | undefined;
  let world: ConformanceWorld | undefined;
  beforeAll(async () => {
    harness = await factory.start();
  });
  beforeEach(async () => {
    if (harness === undefined) throw new Error('the harness did not start');
    const { logger, lines } = capturingLogger();
    const ingress = conformanceIngress();
    const adapter = harness.createAdapter({ logger });
    await adapter.start({ ingress: ingress.ingress, logger });
    world = { harness, adapter, ingress, logs: lines };
  });
  afterEach(async () => {
    world?.ingress.release();
    await world?.adapter.stop();
    world = undefined;
  });
  afterAll(async () => {
    await harness?.close();
  });
  return () => {
    if (world === undefined) throw new Error('no conformance world outside a check');
    return world;
  };
}

/** Resolves with the answer, or `'pending'` if none came within `graceMs` (a bounded negative check). */
export function answerWithin(
  delivery: Promise<DeliveryAnswer>,
  graceMs: number,
): Promise<DeliveryAnswer | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<'pending'>((resolve) => {
    timer = setTimeout(() => resolve('pending'), graceMs);
  });
  return Promise.race([delivery, pending]).finally(() => clearTimeout(timer));
}

let nextText = 0;

/** A text no other event of the run carries, so that the messages of one event can be told apart. */
export function uniqueText(label: string): string {
  nextText += 1;
  return `${label} ${nextText}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The messages the ingress was offered whose text carries `text`. */
export function offeredWith(world: ConformanceWorld, text: string): InboundMessage[] {
  return world.ingress.accepted.filter((message) => message.text.includes(text));
}
