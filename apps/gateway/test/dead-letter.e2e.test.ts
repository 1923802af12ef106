import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import {
  type ServeProcess,
  eventually,
  get,
  post,
  startServe,
  tempDir,
  testConfig,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const cleanup = useCleanups();

describe('dead letters (end to end)', () => {
  describe('when the pipeline keeps answering 503', () => {
    it('retries with backoff, dead-letters, audits, and replays once the pipeline recovers', async () => {
      const backend = await startFakePipeline();
      cleanup(() => backend.close());
      let healthy = false;
      backend.respond = async (request) =>
        healthy
          ? { status: 200, body: { replies: [{ text: `ok: ${request.text}` }] } }
          : { status: 503, body: { error: 'down' } };
      const dir = tempDir();
      const configPath = writeConfig(
        dir,
        testConfig(
          dir,
          `pipelines:
  - id: bot
    type: http
    url: "${backend.url}"
    retry: { max_attempts: 3, base_delay: 200ms, max_delay: 1s }
    dead_letter_reply: "Sorry, try again later."
routing: { default: bot }
`,
        ),
      );
      const gateway: ServeProcess = await startServe({ dir, configPath });
      cleanup(() => gateway.stop('SIGKILL'));

      const answer = await post(`${gateway.url}/v1/messages`, {
        session_id: 's',
        user_id: 'u',
        text: 'help',
      });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'dead_lettered', reason: 'max_attempts' });
      expect(backend.requests.map((r) => r.attempt)).toEqual([1, 2, 3]);
      // Backoff: 200 ms then 400 ms (±20%) between the attempts.
      const retryLines = await eventually(() => {
        const lines = gateway.logs.filter((line) => line.msg === 'turn failed, retrying');
        return lines.length === 2 && lines;
      });
      expect(retryLines.map((line) => line.delayMs)).toEqual([expect.any(Number), expect.any(Number)]);
      expect(Number(retryLines[0]?.delayMs)).toBeGreaterThanOrEqual(160);
      expect(Number(retryLines[1]?.delayMs)).toBeGreaterThanOrEqual(320);
      await eventually(() =>
        gateway.logs.some((line) => line.level === 50 && String(line.msg).startsWith('dead letter')),
      );

      const audit = await get(`${gateway.url}/admin/audit?outcome=dead_lettered`);
      expect(audit.body.items).toHaveLength(1);
      expect(audit.body.items[0]).toMatchObject({
        reason: 'max_attempts',
        pipeline: 'bot',
        text: 'help',
        message_id: answer.body?.id,
      });
      expect(audit.body.items[0].error).toMatch(/503/);
      const deadLetters = await get(`${gateway.url}/admin/dead-letters`);
      const deadLetterId = deadLetters.body.items[0].id;

      healthy = true;
      const replay = await post(`${gateway.url}/admin/dead-letters/${deadLetterId}/replay`, {});
      expect(replay.status).toBe(202);
      const status = await eventually(async () => {
        const current = await get(`${gateway.url}/v1/messages/${answer.body?.id}`);
        return current.body.status === 'completed' && current.body;
      });
      expect(status.replies).toEqual([{ text: 'ok: help' }]);
      expect(backend.requests.at(-1)).toMatchObject({ text: 'help', attempt: 1 });

      const again = await post(`${gateway.url}/admin/dead-letters/${deadLetterId}/replay`, {});
      expect(again.status).toBe(409);
      const unknown = await post(`${gateway.url}/admin/dead-letters/nope/replay`, {});
      expect(unknown.status).toBe(404);
    });
  });
});
