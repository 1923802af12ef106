import { writeFileSync } from 'node:fs';
import { startFakeDiscord } from '@switchboard/testkit/discord';
import { freePort } from '@switchboard/testkit/free-port';
import { eventEnvelope, messageEvent, sendEvent, startFakeSlack } from '@switchboard/testkit/slack';
import { startFakeTelegram } from '@switchboard/testkit/telegram';
import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { sharedStores, startReplicas, storesConfig } from './shared-stores.js';
import {
  type JsonAnswer,
  type ServeProcess,
  eventually,
  get,
  post,
  runCli,
  serveYaml,
  tempDir,
  testConfig,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const cleanup = useCleanups();
const SIGNING_SECRET = 'reload-signing-secret';
const SESSIONS = 20;
const PER_SESSION = 6;

describe('reload (end to end)', () => {
  describe('while 20 HTTP sessions and Telegram polling send, a reload adds Slack, removes Discord, moves the pipeline and raises the limit', () => {
    it('loses and doubles nothing, answers every request, never polls twice, and the new channel answers', {
      timeout: 120_000,
    }, async () => {
      const telegram = await startFakeTelegram();
      cleanup(() => telegram.close());
      const discord = await startFakeDiscord();
      cleanup(() => discord.close());
      const slack = await startFakeSlack();
      cleanup(() => slack.close());
      const before = await startFakePipeline({ delayMs: 40 });
      cleanup(() => before.close());
      const after = await startFakePipeline({ delayMs: 40 });
      cleanup(() => after.close());

      const telegramChannel = `{ id: tg, type: telegram, token: "${telegram.token}", api_root: "${telegram.url}" }`;
      const yaml = (parts: { pipelineUrl: string; limit: number; channels: string[] }) => `
concurrency: { pipeline: ${parts.limit} }
channels:
  - { id: api, type: openapi }
  - ${telegramChannel}
${parts.channels.map((channel) => `  - ${channel}`).join('\n')}
pipelines: [{ id: bot, type: http, url: "${parts.pipelineUrl}" }]
routing: { default: bot }
`;
      const gateway = await serveYaml(
        yaml({
          pipelineUrl: before.url,
          limit: 2,
          channels: [`{ id: dc, type: discord, token: "${discord.token}", api_url: "${discord.url}" }`],
        }),
        { cleanup },
      );
      await eventually(() => discord.connected());

      const answers: JsonAnswer[] = [];
      let telegramSent = 0;
      const sendTelegram = () => {
        telegramSent += 1;
        const chat = { id: 7000 + (telegramSent % 3), first_name: 'Tea', type: 'private' };
        telegram.pushUpdate({
          message: telegram.message({
            chat,
            from: { id: chat.id, is_bot: false, first_name: 'Tea' },
            text: `tg ${telegramSent}`,
          }),
        });
      };
      // Each session sends its messages one after the other; the sessions run side by side.
      const session = async (index: number) => {
        for (let n = 0; n < PER_SESSION; n += 1) {
          answers.push(
            await post(`${gateway.url}/v1/messages`, {
              session_id: `s${index}`,
              user_id: 'u',
              text: `s${index} m${n}`,
            }),
          );
          if (index === 0) sendTelegram();
        }
      };
      const traffic = Promise.all(Array.from({ length: SESSIONS }, (_, index) => session(index)));

      await eventually(() => answers.length >= SESSIONS);
      writeFileSync(
        gateway.configPath,
        testConfig(
          gateway.dir,
          yaml({
            pipelineUrl: after.url,
            limit: 4,
            channels: [
              `{ id: sl, type: slack, bot_token: xoxb-test, signing_secret: ${SIGNING_SECRET}, api_url: "${slack.apiUrl}", bot_user_id: UBOT }`,
            ],
          }),
        ),
      );
      const reload = await post(`${gateway.url}/admin/reload`, {});
      expect(reload.status).toBe(200);
      expect(reload.body?.changed).toEqual([
        'channels.sl: added',
        'channels.dc: removed',
        'pipelines.bot: changed',
        'concurrency.global',
      ]);
      await traffic;

      // Every HTTP message answered once, none with an error, each exactly once by a backend.
      expect(answers).toHaveLength(SESSIONS * PER_SESSION);
      expect(
        answers.filter((answer) => answer.status !== 200 || answer.body?.status !== 'completed'),
      ).toEqual([]);
      const ran = [...before.requests, ...after.requests].filter((request) =>
        request.session.chat_id.startsWith('s'),
      );
      expect(ran.map((request) => request.text).sort()).toEqual(
        answers.map((answer) => answer.body?.replies[0].text.replace('echo: ', '')).sort(),
      );
      expect(new Set(ran.map((request) => request.id)).size).toBe(ran.length);
      // Turns that started after the reload ran on the new URL, with the raised limit.
      expect(after.requests.length).toBeGreaterThan(0);
      expect(before.maxConcurrent).toBeLessThanOrEqual(2);
      expect(after.maxConcurrent).toBeGreaterThan(2);
      expect(after.maxConcurrent).toBeLessThanOrEqual(4);

      // Telegram: one poller throughout, each update answered once.
      await eventually(() => telegram.sentMessages().length >= telegramSent, 30_000);
      expect(telegram.sentMessages()).toHaveLength(telegramSent);
      expect(telegram.maxOpenPolls()).toBe(1);

      // The new Slack channel answers; Discord is gone.
      const slackAnswer = await sendEvent(
        gateway.url,
        'sl',
        eventEnvelope(messageEvent({ channel: 'D0RELOAD', text: 'hello slack' })),
        { signingSecret: SIGNING_SECRET },
      );
      expect(slackAnswer.status).toBe(200);
      await eventually(() => slack.callsTo('chat.postMessage').length > 0);
      expect(slack.callsTo('chat.postMessage')[0]?.body).toMatchObject({ text: 'echo: hello slack' });
      const readiness = await get(`${gateway.url}/readyz`);
      expect(Object.keys(readiness.body.checks)).toEqual(
        expect.arrayContaining(['channel.sl', 'channel.tg']),
      );
      expect(readiness.body.checks['channel.dc']).toBeUndefined();
      await eventually(() => !discord.connected());
    });
  });

  describe('when the file changes what needs a restart', () => {
    it('refuses the reload naming each path, keeps the old configuration, and `switchboard reload` says so', async () => {
      const port = await freePort();
      const gateway = await serveYaml('pipelines: [{ id: echo, type: echo }]\nrouting: { default: echo }\n', {
        cleanup,
        server: `host: 127.0.0.1, port: ${port}`,
      });
      writeFileSync(
        gateway.configPath,
        testConfig(
          gateway.dir,
          'shutdown: { drain_timeout: 5s }\npipelines: [{ id: other, type: echo }]\nrouting: { default: other }\n',
          `host: 127.0.0.1, port: ${port + 1}`,
        ),
      );
      const refused = await post(`${gateway.url}/admin/reload`, {});
      expect(refused.status).toBe(409);
      expect(refused.body?.error).toMatchObject({
        code: 'SB_RELOAD_REFUSED',
        details: { paths: ['server.port', 'shutdown.drainTimeoutMs'] },
      });
      // The CLI reads the file for the address: this one keeps the port.
      writeFileSync(
        gateway.configPath,
        testConfig(
          gateway.dir,
          'shutdown: { drain_timeout: 5s }\npipelines: [{ id: other, type: echo }]\nrouting: { default: other }\n',
          `host: 127.0.0.1, port: ${port}`,
        ),
      );
      const cli = await runCli(['reload', '-c', gateway.configPath], { cwd: gateway.dir });
      expect(cli.code).toBe(1);
      expect(cli.stderr).toContain(
        'SB_RELOAD_REFUSED: these settings change only with a restart; nothing was reloaded: shutdown.drainTimeoutMs',
      );
      // The old pipeline still answers.
      const answer = await post(`${gateway.url}/v1/messages`, {
        session_id: 's',
        user_id: 'u',
        text: 'still',
      });
      expect(answer.body).toMatchObject({ status: 'completed', replies: [{ text: 'still' }] });

      writeFileSync(
        gateway.configPath,
        testConfig(
          gateway.dir,
          'pipelines: [{ id: other, type: echo }]\nrouting: { default: other }\n',
          `host: 127.0.0.1, port: ${port}`,
        ),
      );
      const accepted = await runCli(['reload', '-c', gateway.configPath], { cwd: gateway.dir });
      expect(accepted).toMatchObject({ code: 0 });
      expect(accepted.stdout).toContain('pipelines.other: added');
      expect(accepted.stdout).toContain('pipelines.echo: removed');
    });
  });

  describe('when a changed polling channel fails to start', () => {
    it('answers the failure without the token, and the channel before the change polls and answers again', {
      timeout: 60_000,
    }, async () => {
      const telegram = await startFakeTelegram();
      cleanup(() => telegram.close());
      const yaml = (token: string) => `
channels:
  - { id: tg, type: telegram, token: "${token}", api_root: "${telegram.url}" }
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`;
      const gateway = await serveYaml(yaml(telegram.token), { cleanup });
      const say = (text: string) => {
        const chat = { id: 7100, first_name: 'Tea', type: 'private' };
        telegram.pushUpdate({
          message: telegram.message({ chat, from: { id: chat.id, is_bot: false, first_name: 'Tea' }, text }),
        });
      };
      say('before');
      await eventually(() => telegram.deliveredTo(7100).includes('before'));

      // Telegram refuses this token: the new connection cannot start.
      writeFileSync(gateway.configPath, testConfig(gateway.dir, yaml('111:refused-token')));
      const failed = await post(`${gateway.url}/admin/reload`, {});
      expect(failed.status).toBeGreaterThanOrEqual(400);
      expect(failed.body?.error?.code).toMatch(/^SB_/);
      expect(JSON.stringify(failed.body)).not.toContain('refused-token');

      say('after');
      await eventually(() => telegram.deliveredTo(7100).includes('after'), 30_000);

      // The same token, another option; the answer to the new start quotes the URL holding the token.
      telegram.failNext('getMe', 1, { status: 404, description: `Not Found: /bot${telegram.token}/getMe` });
      writeFileSync(
        gateway.configPath,
        testConfig(
          gateway.dir,
          yaml(telegram.token).replace('api_root:', 'outbound: { edit_interval: 2s }, api_root:'),
        ),
      );
      const quoted = await post(`${gateway.url}/admin/reload`, {});
      expect(quoted.status).toBeGreaterThanOrEqual(400);
      expect(JSON.stringify(quoted.body)).toContain('Not Found: /bot');
      expect(JSON.stringify(quoted.body)).not.toContain(telegram.token.split(':')[1]);

      say('again');
      await eventually(() => telegram.deliveredTo(7100).includes('again'), 30_000);
      expect(telegram.maxOpenPolls()).toBe(1);
    });
  });

  describe('when server.host is an address of another machine', () => {
    it('`switchboard reload` refuses to send the admin token there over plain HTTP', async () => {
      const dir = tempDir();
      // 192.0.2.1 (TEST-NET-1) is no address of this machine and answers nothing.
      const configPath = writeConfig(
        dir,
        testConfig(dir, 'admin: { token: "reload-admin-token-0123456789" }\n', 'host: 192.0.2.1, port: 8080'),
      );
      const cli = await runCli(['reload', '-c', configPath], { cwd: dir });
      expect(cli.code).toBe(1);
      expect(cli.stderr).toContain(
        'server.host 192.0.2.1 is not an address of this machine: the admin token is not sent over plain HTTP to another host',
      );
    });
  });

  describe('when a reload removes a pipeline with a turn running and a message queued on it', () => {
    it('finishes the running turn there, dead-letters the queued one as pipeline_removed, and a replay routes it anew', {
      timeout: 60_000,
    }, async () => {
      const old = await startFakePipeline();
      cleanup(() => old.close());
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      old.respond = async (request) => {
        await held;
        return { status: 200, body: { replies: [{ text: `old: ${request.text}` }] } };
      };
      const gateway = await serveYaml(
        `pipelines: [{ id: old, type: http, url: "${old.url}" }, { id: echo, type: echo }]\nrouting: { default: old }\n`,
        { cleanup },
      );
      const send = (text: string) =>
        post(`${gateway.url}/v1/messages`, { session_id: 's', user_id: 'u', text, wait: false });
      const first = await send('first');
      await eventually(() => old.requests.length === 1);
      const second = await send('second');

      writeFileSync(
        gateway.configPath,
        testConfig(gateway.dir, 'pipelines: [{ id: echo, type: echo }]\nrouting: { default: echo }\n'),
      );
      expect((await post(`${gateway.url}/admin/reload`, {})).body?.changed).toEqual([
        'pipelines.old: removed',
        'routing',
      ]);
      release();

      const status = (id: string) => get(`${gateway.url}/v1/messages/${id}`).then((answer) => answer.body);
      expect(
        await eventually(async () =>
          (await status(first.body?.id)).status === 'completed' ? status(first.body?.id) : false,
        ),
      ).toMatchObject({
        replies: [{ text: 'old: first' }],
      });
      await eventually(async () => (await status(second.body?.id)).status === 'dead_lettered');
      const deadLetters = await get(`${gateway.url}/admin/dead-letters`);
      expect(deadLetters.body.items).toMatchObject([
        { reason: 'pipeline_removed', message_id: second.body?.id },
      ]);

      const replay = await post(
        `${gateway.url}/admin/dead-letters/${deadLetters.body.items[0].id}/replay`,
        {},
      );
      expect(replay.status).toBe(202);
      const replayed = await eventually(async () => {
        const current = await status(second.body?.id);
        return current.status === 'completed' && current;
      });
      expect(replayed.replies).toEqual([{ text: 'second' }]);
      expect(old.requests.map((request) => request.text)).toEqual(['first']);
    });
  });

  describe('with two replicas on Redis', () => {
    it('the other replica follows a reload, or reports that its file differs', {
      timeout: 60_000,
    }, async () => {
      const stores = sharedStores(cleanup);
      const yaml = (limit: number) =>
        storesConfig(
          stores,
          `concurrency: { pipeline: ${limit} }\npipelines: [{ id: echo, type: echo }]\nrouting: { default: echo }\n`,
        );
      const replicas = await startReplicas(2, yaml(2));
      for (const replica of replicas) cleanup(() => replica.stop('SIGKILL'));
      const [a, b] = replicas as [ServeProcess, ServeProcess];
      const configs = async () => {
        const queues = await get(`${a.url}/admin/queues`);
        return new Map(
          (
            queues.body.replicas as Array<{ id: string; config: { version: number; state: string } | null }>
          ).map((replica) => [replica.id, replica.config]),
        );
      };
      await eventually(async () => [...(await configs()).values()].every((config) => config?.version === 1));

      writeFileSync(a.configPath, yaml(3));
      writeFileSync(b.configPath, yaml(3));
      expect((await post(`${a.url}/admin/reload`, {})).body?.changed).toEqual(['concurrency.global']);
      await eventually(async () => {
        const reported = [...(await configs()).values()];
        return (
          reported.length === 2 &&
          reported.every((config) => config?.version === 2 && config.state === 'current')
        );
        // b follows at its next check, every renewal period (5 s); a loaded machine may take longer.
      }, 20_000);
      const answer = await post(`${b.url}/v1/messages`, { session_id: 's', user_id: 'u', text: 'after' });
      expect(answer.body?.status).toBe('completed');

      // Only a's file changes: b keeps version 2 and says its file differs.
      writeFileSync(a.configPath, yaml(4));
      await post(`${a.url}/admin/reload`, {});
      // b notices at its next check (every 5 s): a loaded machine may take longer.
      await eventually(
        async () =>
          [...(await configs()).values()].some(
            (config) => config?.version === 2 && config.state === 'differs',
          ),
        20_000,
      );
      expect(b.logs.some((line) => line.msg === 'fleet config differs from this file')).toBe(true);
    });
  });
});
