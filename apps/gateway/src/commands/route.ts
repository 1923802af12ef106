import { DEFAULT_TENANT, loadConfig } from '@switchboard/config';
import { EVENT_TYPES, type EventType, SwitchboardError, createRouter } from '@switchboard/core';
import { dryRunRoute } from '../admin/route-dry-run.js';
import type { CommandIo } from './io.js';

export interface RouteFlags {
  channel: string;
  chatType: string;
  chatId: string;
  sender?: string;
  text: string;
  mention: boolean;
  /** `--event`: routes an edit, deletion or reaction of this type instead of a new message. */
  event?: string;
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
  const { event } = flags;
  if (event !== undefined && !(EVENT_TYPES as readonly string[]).includes(event)) {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: `--event: expected one of ${EVENT_TYPES.join(', ')}, got "${event}"`,
    });
  }
  // The channel's tenant's routing, the one the gateway routes its messages with.
  const tenant =
    config.tenants.find((candidate) => candidate.channels.includes(channel.id)) ?? config.tenants[0];
  const routing = tenant?.routing ?? config.routing;
  const router = createRouter(routing, { pipelines: tenant?.pipelines ?? [] });
  const run = dryRunRoute(router, channel, {
    chatType: flags.chatType,
    chatId: flags.chatId,
    ...(flags.sender === undefined ? {} : { sender: flags.sender }),
    text: flags.text,
    mention: flags.mention,
    ...(event === undefined ? {} : { event: event as EventType }),
  });

  if (flags.json) {
    io.out(
      JSON.stringify(
        {
          rule: run.rule,
          pipeline: run.pipeline,
          routed_by_rule: run.routed_by_rule,
          admission: run.admission,
          trace: run.trace,
        },
        null,
        2,
      ),
    );
    return 0;
  }
  io.out(`rule:     ${run.rule ?? 'default'}`);
  io.out(`pipeline: ${run.pipeline}`);
  io.out(`result:   ${run.result}`);
  io.out('why:');
  for (const [index, step] of run.trace.entries()) {
    io.out(`  ${index + 1}. ${step.rule}: ${step.why}${step.matched ? '  ← match' : ''}`);
  }

  if (run.rule === null && event !== undefined) io.out('  no event rule matched: the event is ignored');
  else if (run.rule === null) {
    const at =
      tenant === undefined || tenant.id === DEFAULT_TENANT ? 'routing' : `tenant ${tenant.id}: routing`;
    io.out(`  no rule matched: ${at}.default is "${routing.default}"`);
  }
  return 0;
}
