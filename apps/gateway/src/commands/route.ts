import { loadConfig } from '@switchboard/config';
import {
  DISCARD,
  SwitchboardError,
  admit,
  createRouter,
  newMessageId,
  parseInboundMessage,
} from '@switchboard/core';
import type { CommandIo } from './io.js';

export interface RouteFlags {
  channel: string;
  chatType: string;
  chatId: string;
  sender?: string;
  text: string;
  mention: boolean;
  json: boolean;
}

/**
 * `switchboard route`: a dry run of admission and routing for one message — which rule matched
 * (or the default), why, and the pipeline it would run on.
 */
export async function route(path: string, flags: RouteFlags, io: CommandIo): Promise<number> {
  const config = await loadConfig(path);
  const channel = config.channels.find((candidate) => candidate.id === flags.channel);
  if (channel === undefined) {
    const known = config.channels.map((candidate) => candidate.id).join(', ');
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: `--channel: no channel "${flags.channel}" in ${path} (known: ${known})`,
    });
  }
  const message = parseInboundMessage({
    id: newMessageId(),
    platform: channel.type,
    channel: channel.id,
    chat: { type: flags.chatType, id: flags.chatId },
    sender: { id: flags.sender ?? 'cli-user' },
    elements: [{ type: 'text', text: flags.text }],
    text: flags.text,
    mentions_bot: flags.mention,
    platform_message_id: 'dry-run',
    received_at: Date.now(),
  });
  const router = createRouter(config.routing, { pipelines: config.pipelines.map((pipeline) => pipeline.id) });
  const { decision, trace } = router.explain(message);
  const admission =
    channel.type === 'openapi'
      ? ({ admitted: true } as const)
      : admit(message, channel.policy.admission, decision.routedByRule);
  const result = !admission.admitted
    ? `ignored (${admission.reason})`
    : decision.pipeline === DISCARD
      ? 'discarded (audited)'
      : `pipeline ${decision.pipeline}`;

  if (flags.json) {
    io.out(
      JSON.stringify(
        {
          rule: decision.rule,
          pipeline: decision.pipeline,
          routed_by_rule: decision.routedByRule,
          admission,
          trace,
        },
        null,
        2,
      ),
    );
    return 0;
  }
  io.out(`rule:     ${decision.rule ?? 'default'}`);
  io.out(`pipeline: ${decision.pipeline}`);
  io.out(`result:   ${result}`);
  io.out('why:');
  for (const [index, step] of trace.entries()) {
    io.out(`  ${index + 1}. ${step.rule}: ${step.why}${step.matched ? '  ← match' : ''}`);
  }

  if (decision.rule === null) io.out(`  no rule matched: routing.default is "${config.routing.default}"`);
  return 0;
}
