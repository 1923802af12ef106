import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import {
  type ServeProcess,
  eventually,
  get,
  post,
  serveYaml,
  simultaneousPosts,
  useCleanups,
} from './serve-process.js';

const cleanup = useCleanups();

/**
 * A gateway whose `bot` pipeline answers `failure` until `state.healthy` is set, then replies
 * `ok: <text>`. `pipeline` adds keys to the pipeline; `rest` ends the config (an audit: section).
 */
async function gatewayFailingUntilHealthy(
  failure: { status: number; body: unknown },
  pipeline = '',
  rest = '',
) {
  const backend = await startFakePipeline();
  cleanup(() => backend.close());
  const state = { healthy: false };
  backend.respond = async (request) =>
    state.healthy ? { status: 200, body: { replies: [{ text: `ok: ${request.text}` }] } } : failure;
  const gateway: ServeProcess = await serveYaml(
    `pipelines:
  - id: bot
    type: http
    url: "${backend.url}"
${pipeline}routing: { default: bot }
${rest}
`,
    { cleanup },
  );
  return { backend, state, gateway };
}

describe('dead letters (end to end)', () => {
  describe('when the pipeline keeps answering 503', () => {
    it('retries with backoff, dead-letters, audits, and replays once the pipeline recovers', async () => {
      const { backend, state, gateway } = await gatewayFailingUntilHealthy(
        { status: 503, body: { error: 'down' } },
        `    retry: { max_attempts: 3, base_delay: 200ms, max_delay: 1s }
    dead_letter_reply: "Sorry, try again later."
`,
      );

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

      state.healthy = true;
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

  /** A gateway whose pipeline fails fatally (400) until `healthy`; `audit` is the audit: section. */
  async function deadLetteringGateway(audit = '') {
    const { backend, state, gateway } = await gatewayFailingUntilHealthy(
      { status: 400, body: { error: 'bad' } },
      '',
      audit,
    );
    const answer = await post(`${gateway.url}/v1/messages`, { session_id: 's', user_id: 'u', text: 'help' });
    expect(answer.body).toMatchObject({ status: 'dead_lettered', reason: 'fatal_error' });
    const deadLetters = await get(`${gateway.url}/admin/dead-letters`);
    return { backend, state, gateway, messageId: answer.body?.id, deadLetter: deadLetters.body.items[0] };
  }

  describe('when several replays of one dead letter arrive at once', () => {
    it('queues it once: one answers 202, the others 409 SB_HTTP_CONFLICT', async () => {
      const { backend, state, gateway, messageId, deadLetter } = await deadLetteringGateway();
      state.healthy = true;
      const replays = await simultaneousPosts(`${gateway.url}/admin/dead-letters/${deadLetter.id}/replay`, 5);
      expect(replays.map((replay) => replay.status).sort()).toEqual([202, 409, 409, 409, 409]);
      expect(
        replays.filter((replay) => replay.status === 409).map((replay) => replay.body.error?.code),
      ).toEqual(Array(4).fill('SB_HTTP_CONFLICT'));
      await eventually(
        async () => (await get(`${gateway.url}/v1/messages/${messageId}`)).body.status === 'completed',
      );
      // The first request dead-lettered it; the replay ran it exactly once more.
      expect((await get(`${gateway.url}/admin/queues`)).body).toMatchObject({ pending: 0, inflight: 0 });
      expect(backend.requests.map((request) => request.messages.map((m) => m.id))).toEqual([
        [messageId],
        [messageId],
      ]);
    });
  });

  describe('when audit.store_text is none', () => {
    it('lists the dead letter as not replayable and refuses its replay with SB_DEAD_LETTER_NOT_REPLAYABLE', async () => {
      const { backend, gateway, deadLetter } = await deadLetteringGateway('audit: { store_text: none }');
      expect(deadLetter).toMatchObject({ text: null, replayable: false });
      const replay = await post(`${gateway.url}/admin/dead-letters/${deadLetter.id}/replay`, {});
      expect(replay.status).toBe(422);
      expect(replay.body?.error.code).toBe('SB_DEAD_LETTER_NOT_REPLAYABLE');
      expect(backend.requests).toHaveLength(1);
    });
  });
});
