import {
  type ClaimedTurn,
  type PooledMessageState,
  type QueuedMessage,
  requestIdOf,
  turnIdOf,
} from '@switchboard/core';

/**
 * The shapes the Lua scripts answer (see each file's header) and their decoding. Integer replies
 * arrive as numbers, bulk strings as strings.
 */

/** `{payload, attempt, retryAt or '', acceptedAt}`: a message as stored beside the fields scripts set. */
export type MessageReply = [payload: string, attempt: string, retryAt: string, acceptedAt: string];
/** `{token, session, pipeline, replica, {request ids}}`: an expired lease taken over. */
export type ReclaimedReply = [
  token: string,
  session: string,
  pipeline: string,
  replica: string,
  requestIds: string[],
];
/** `{token, session, pipeline, expiresAt, messages}`, or `{}` for no turn. */
export type TurnReply =
  | [token: string, session: string, pipeline: string, expiresAt: number, messages: MessageReply[]]
  | [];

/** What a transition tells the replica that made it: may a claim succeed, when is the next due time (-1: none). */
export interface RunnableState {
  claimable: boolean;
  nextDueAt: number;
}

export const runnableStateOf = (claimable: number, nextDueAt: number): RunnableState => ({
  claimable: claimable === 1,
  nextDueAt,
});

/**
 * The message as stored: without `attempt`, `retryAtMs` and `acceptedAt`, which live in fields
 * beside the payload so that scripts set them without decoding JSON (Redis' cjson would also
 * turn an empty array into an object). `acceptedAt` is the enqueue script's `now`, not the
 * caller's: the debounce of one burst compares times on one clock (lua/pool/enqueue.lua).
 */
export function payloadOf(queued: QueuedMessage): string {
  const { attempt: _attempt, retryAtMs: _retryAtMs, acceptedAt: _acceptedAt, ...stored } = queued;
  return JSON.stringify(stored);
}

export function queuedOf([payload, attempt, retryAt, acceptedAt]: MessageReply): QueuedMessage {
  const queued = JSON.parse(payload) as QueuedMessage;
  queued.attempt = Number(attempt);
  queued.acceptedAt = Number(acceptedAt);
  if (retryAt !== '') queued.retryAtMs = Number(retryAt);
  return queued;
}

/** A claimed turn; `claimable`: what the script that claimed it said of a further claim. */
export function turnOf(reply: TurnReply, claimable: number): ClaimedTurn | null {
  if (reply.length === 0) return null;
  const [token, session, pipeline, expiresAt, messages] = reply;
  const queued = messages.map(queuedOf);
  return {
    id: turnIdOf(queued.map(requestIdOf)),
    session,
    pipeline,
    messages: queued,
    attempt: Math.max(...queued.map((message) => message.attempt)),
    lease: { token, expiresAt },
    more: claimable === 1,
  };
}

/** `{}`, `{'settled', pipeline}` or `{'queued' | 'running', pipeline, payload}` (lua/pool/locate.lua). */
export type LocateReply =
  | []
  | ['settled', pipeline: string, channel: string]
  | [state: 'queued' | 'running', pipeline: string, payload: string];

export function locatedOf(reply: LocateReply): PooledMessageState | null {
  if (reply.length === 0) return null;
  if (reply[0] === 'settled') return { state: 'settled', pipeline: reply[1], channel: reply[2], rule: null };
  const [state, pipeline, payload] = reply;
  const { message, rule } = JSON.parse(payload) as Pick<QueuedMessage, 'message' | 'rule'>;
  return {
    state,
    pipeline,
    channel: message.channel,
    ...(message.tenant === undefined ? {} : { tenant: message.tenant }),
    rule: rule ?? null,
  };
}
