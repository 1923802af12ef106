import {
  type ServeProcess,
  startServe,
  tempDir,
  testConfig,
  writeConfig,
} from '../../apps/gateway/test/serve-process.js';
import { type FakeSlack, startFakeSlack } from '../../packages/testkit/src/slack.js';
import { type FakeTelegram, startFakeTelegram } from '../../packages/testkit/src/telegram.js';

/**
 * One real `switchboard serve` with every inbound HTTP surface the reliability scenarios attack:
 * an openapi channel `api` with an API key, the admin API with a token, a Telegram channel `tg`
 * in webhook mode and a Slack Events API channel `sl`, both against the fake platform servers of
 * packages/testkit. Every secret reaches the config through an environment variable, as in a real
 * deployment, so a scenario can look for the values wherever the gateway writes.
 */

/** The credentials of the gateway; the scenario picks recognisable values. */
export interface GatewaySecrets {
  apiKey: string;
  adminToken: string;
  telegramToken: string;
  telegramSecretToken: string;
  slackBotToken: string;
  slackSigningSecret: string;
}

export interface EveryChannelGateway {
  gateway: ServeProcess;
  telegram: FakeTelegram;
  slack: FakeSlack;
  secrets: GatewaySecrets;
  /** The env the gateway was started with (the secrets and `extraEnv`). */
  env: Record<string, string>;
  /** `POST` target of the Telegram webhook and of the Slack Events API. */
  telegramWebhookUrl: string;
  slackEventsUrl: string;
  /** Stops the gateway (SIGKILL: the scenario is over) and the fakes. */
  close(): Promise<void>;
}

export interface EveryChannelGatewayOptions {
  secrets: GatewaySecrets;
  /** The `pipelines:` and `routing:` sections. */
  pipelinesYaml: string;
  /** More variables for `${VAR}`s in `pipelinesYaml`. */
  extraEnv?: Record<string, string>;
}

/** The config; `${SB_…}` are filled from the env `startEveryChannelGateway` passes. */
function configYaml(telegram: FakeTelegram, slack: FakeSlack, pipelinesYaml: string): string {
  return `admin: { token: "\${SB_ADMIN_TOKEN}" }
channels:
  - { id: api, type: openapi, api_keys: ["\${SB_API_KEY}"] }
  - id: tg
    type: telegram
    token: "\${SB_TELEGRAM_TOKEN}"
    mode: webhook
    api_root: "${telegram.url}"
    webhook: { secret_token: "\${SB_TELEGRAM_SECRET_TOKEN}" }
  - { id: sl, type: slack, bot_token: "\${SB_SLACK_BOT_TOKEN}", signing_secret: "\${SB_SLACK_SIGNING_SECRET}", api_url: "${slack.apiUrl}" }
${pipelinesYaml}`;
}

/** Starts the fakes and the gateway; resolves once the gateway listens. */
export async function startEveryChannelGateway(
  options: EveryChannelGatewayOptions,
): Promise<EveryChannelGateway> {
  const { secrets } = options;
  const telegram = await startFakeTelegram({ token: secrets.telegramToken });
  const slack = await startFakeSlack({ botToken: secrets.slackBotToken });
  const env = {
    SB_API_KEY: secrets.apiKey,
    SB_ADMIN_TOKEN: secrets.adminToken,
    SB_TELEGRAM_TOKEN: secrets.telegramToken,
    SB_TELEGRAM_SECRET_TOKEN: secrets.telegramSecretToken,
    SB_SLACK_BOT_TOKEN: secrets.slackBotToken,
    SB_SLACK_SIGNING_SECRET: secrets.slackSigningSecret,
    ...options.extraEnv,
  };
  const dir = tempDir();
  const configPath = writeConfig(dir, testConfig(dir, configYaml(telegram, slack, options.pipelinesYaml)));
  let gateway: ServeProcess;
  try {
    gateway = await startServe({ dir, configPath, env });
  } catch (error) {
    await Promise.all([telegram.close(), slack.close()]);
    throw error;
  }
  return {
    gateway,
    telegram,
    slack,
    secrets,
    env,
    telegramWebhookUrl: `${gateway.url}/telegram/tg`,
    slackEventsUrl: `${gateway.url}/slack/sl/events`,
    async close() {
      if (gateway.child.exitCode === null) await gateway.stop('SIGKILL');
      await Promise.all([telegram.close(), slack.close()]);
    },
  };
}
