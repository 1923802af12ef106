import type { ChannelConfig } from '@switchboard/config';
import {
  type AdmissionDecision,
  DISCARD,
  type EventType,
  HANDOFF,
  IGNORE_EVENT,
  type RouteTraceStep,
  type Router,
  admit,
  newMessageId,
  parseInboundMessage,
} from '@switchboard/core';

/** The message a dry run routes: what `switchboard route` takes as flags and `POST /admin/route` as body. */
export interface DryRunInput {
  chatType: string;
  chatId: string;
  sender?: string;
  text: string;
  mention: boolean;
  /** Routes an edit, deletion or reaction of that type instead of a new message. */
  event?: EventType;
}

/** What routing and admission would do with a message, and why. */
export interface DryRunResult {
  rule: string | null;
  pipeline: string;
  routed_by_rule: boolean;
  admission: AdmissionDecision;
  /** `pipeline <id>`, `discarded (audited)`, `handed to an operator (audited)` or `ignored (<reason>)`. */
  result: string;
  /** The rules checked in order, up to the one that matched. */
  trace: RouteTraceStep[];
}

/**
 * A dry run of admission and routing for one message on `channel` (docs/design.md §7): the same
 * router the gateway routes with, nothing enqueued or recorded.
 */
export function dryRunRoute(router: Router, channel: ChannelConfig, input: DryRunInput): DryRunResult {
  const message = parseInboundMessage({
    id: newMessageId(),
    platform: channel.type,
    channel: channel.id,
    chat: { type: input.chatType, id: input.chatId },
    sender: { id: input.sender ?? 'cli-user' },
    elements: [{ type: 'text', text: input.text }],
    text: input.text,
    mentions_bot: input.mention,
    platform_message_id: 'dry-run',
    received_at: Date.now(),
    ...(input.event === undefined ? {} : { event: { type: input.event, message_id: 'dry-run-original' } }),
  });
  const { decision, trace } = router.explain(message);
  // An event no rule routes is ignored before admission, as ingress does.
  const admission: AdmissionDecision =
    channel.type === 'openapi' || decision.pipeline === IGNORE_EVENT
      ? { admitted: true }
      : admit(message, channel.policy.admission, decision.routedByRule);
  const result =
    decision.pipeline === IGNORE_EVENT
      ? 'ignored (unrouted_event)'
      : !admission.admitted
        ? `ignored (${admission.reason})`
        : decision.pipeline === DISCARD
          ? 'discarded (audited)'
          : decision.pipeline === HANDOFF
            ? 'handed to an operator (audited)'
            : `pipeline ${decision.pipeline}`;
  return {
    rule: decision.rule,
    pipeline: decision.pipeline,
    routed_by_rule: decision.routedByRule,
    admission,
    result,
    trace,
  };
}
