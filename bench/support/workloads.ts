import { type InboundMessage, sessionKeyOf } from '@switchboard/core';
import type { BenchMessage } from './scheduler.js';

/** A stream of messages spread over sessions; arrival order interleaves the sessions. */
export interface Workload {
  /** Short id used in the tables and the JSON. */
  id: string;
  messages: number;
  sessions: number;
  /** When set, session 0 gets this share of the messages and the others split the rest evenly. */
  hotShare?: number;
}

/** Three shapes of load: a few busy sessions, many quiet ones, one hot session. */
export const SCHEDULER_WORKLOADS: readonly Workload[] = [
  { id: '10k msgs / 10 sessions', messages: 10_000, sessions: 10 },
  { id: '100k msgs / 10k sessions', messages: 100_000, sessions: 10_000 },
  { id: '100k msgs / 100 sessions, one holds half', messages: 100_000, sessions: 100, hotShare: 0.5 },
];

/** Which session message `index` belongs to: round-robin, or every other one to the hot session. */
function sessionIndexOf(workload: Workload, index: number): number {
  if (workload.hotShare === undefined) return index % workload.sessions;
  // With a share of ½ the hot session takes every other message; the rest cycle over the others.
  const period = Math.round(1 / workload.hotShare);
  if (index % period === 0) return 0;
  const other = index - Math.floor(index / period) - 1;
  return 1 + (other % (workload.sessions - 1));
}

/** A unified message shaped like the OpenAPI channel's, in chat `chat`. */
export function benchMessage(index: number, chat: string): BenchMessage {
  const id = `m${String(index).padStart(9, '0')}`;
  const text = `message ${index}`;
  const inbound: InboundMessage = {
    id,
    platform: 'openapi',
    channel: 'api',
    chat: { type: 'person', id: chat },
    sender: { id: `user-${chat}`, is_bot: false },
    elements: [{ type: 'text', text }],
    text,
    mentions_bot: true,
    platform_message_id: id,
    received_at: Date.now(),
  };
  return { id, session: sessionKeyOf(inbound), text, inbound };
}

/** Builds the workload's messages in arrival order; `offset` shifts ids so batches stay distinct. */
export function buildMessages(workload: Workload, offset = 0): BenchMessage[] {
  const messages: BenchMessage[] = new Array(workload.messages);
  for (let index = 0; index < workload.messages; index++) {
    messages[index] = benchMessage(offset + index, `s${sessionIndexOf(workload, index)}`);
  }
  return messages;
}
