import {
  type ChannelProbeOptions,
  channelFailure,
  probePlatform,
  requestPlatform,
} from '@switchboard/channel-kit';
import type { ProbeResult } from '@switchboard/core';
import { slackErrorKind } from './errors.js';
import type { SlackChannelConfig } from './options.js';

/** The Web API base Bolt calls unless `api_url` names another. */
const SLACK_API_URL = 'https://slack.com/api/';

/** The parts of auth.test's answer the probe reads. */
interface AuthTest {
  ok?: boolean;
  error?: string;
  user?: string;
  team?: string;
}

/**
 * The read-only check of a Slack channel (`switchboard doctor`): auth.test with the bot token.
 * Slack answers HTTP 200 with `ok: false` to a refused token, so its `error` is read like the
 * channel reads it (`invalid_auth` → a refused credential).
 */
export function probeSlackChannel(
  config: SlackChannelConfig,
  { configPath, timeoutMs }: ChannelProbeOptions,
): Promise<ProbeResult> {
  const api = config.apiUrl === undefined ? SLACK_API_URL : config.apiUrl.replace(/\/*$/, '/');
  const where = { type: 'slack', channelId: config.id, call: 'auth.test' };
  const secrets = [config.botToken];
  const target = {
    platform: 'Slack',
    apiUrl: api,
    credential: 'the bot token',
    credentialPath: `${configPath}.bot_token`,
  };
  return probePlatform(target, async () => {
    const answer = ((await requestPlatform({
      where,
      url: `${api}auth.test`,
      headers: { authorization: `Bearer ${config.botToken}` },
      timeoutMs,
      secrets,
    })) ?? {}) as AuthTest;
    if (answer.ok !== true) {
      const code = answer.error ?? 'no error given';
      throw channelFailure(where, { code, kind: slackErrorKind(code) }, { secrets });
    }
    return { level: 'ok', detail: `Slack bot @${answer.user ?? '?'} in ${answer.team ?? 'its workspace'}` };
  });
}
