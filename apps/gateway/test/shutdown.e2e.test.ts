import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { eventually, post, resolvesWithin, serveYaml, useCleanups } from './serve-process.js';

const cleanup = useCleanups();

const DRAIN_TIMEOUT_MS = 2000;
/**
 * What a stop may take past `drain_timeout`: the abort grace of running turns, the close, and a
 * loaded test machine. Before the fix these stops took the request's 60 s, or for ever.
 */
const STOP_SLACK_MS = 8000;
/** The longest a stop may take, from the signal to the exit. */
const STOP_BOUND_MS = DRAIN_TIMEOUT_MS + STOP_SLACK_MS;

/** A gateway in front of a backend that never answers, with a short drain timeout. */
async function startWithHangingBackend() {
  const backend = await startFakePipeline();
  const answers: Array<() => void> = [];
  // Held until the test ends: the turn runs for as long as the gateway lets it.
  backend.respond = () =>
    new Promise((resolve) => answers.push(() => resolve({ status: 200, body: { replies: [] } })));
  cleanup(async () => {
    for (const answer of answers) answer();
    await backend.close();
  });
  const gateway = await serveYaml(
    `shutdown: { drain_timeout: ${DRAIN_TIMEOUT_MS}ms }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }`,
    { cleanup },
  );
  return { gateway, backend };
}

describe('shutdown (end to end)', () => {
  describe('when SIGTERM arrives while a request waits (timeout_ms: 60000) on a backend that hangs', () => {
    it('answers the request 202 at the drain and exits 0 within drain_timeout + a few seconds', {
      timeout: 120_000,
    }, async () => {
      const { gateway, backend } = await startWithHangingBackend();
      // fetch keeps its connection alive: the gateway must close it rather than wait for it.
      const waiting = post(`${gateway.url}/v1/messages`, {
        session_id: 's1',
        user_id: 'u1',
        text: 'slow',
        timeout_ms: 60_000,
      });
      await eventually(() => backend.requests.length === 1);

      const signalledAt = Date.now();
      gateway.child.kill('SIGTERM');
      const answer = await resolvesWithin(waiting, STOP_BOUND_MS, 'an answer to the waiting request');
      expect(answer.status).toBe(202);
      expect(answer.body?.status).toBe('running');
      expect(Date.now() - signalledAt).toBeLessThan(DRAIN_TIMEOUT_MS);

      expect(await resolvesWithin(gateway.exited, STOP_BOUND_MS, 'the exit after SIGTERM')).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(STOP_BOUND_MS);
    });
  });

  describe('when SIGTERM arrives while a client has sent half a request body', () => {
    it('exits 0 within drain_timeout + a few seconds instead of waiting for the rest', {
      timeout: 120_000,
    }, async () => {
      const { gateway } = await startWithHangingBackend();
      const { hostname, port } = new URL(gateway.url);
      const socket = connect(Number(port), hostname);
      cleanup(async () => socket.destroy());
      socket.on('error', () => {});
      // Read as it comes: a socket holding unread data never emits 'close', even once the gateway
      // has closed its side.
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString();
      });
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      // A write's callback says only that the kernel has the bytes. The gateway's `100 Continue`
      // says it has parsed the headers, so the request waits for its body when the signal comes;
      // headers parsed after the channel has stopped are answered 503 at once, with no wait to cut.
      socket.write(
        'POST /v1/messages HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n' +
          'Content-Length: 100\r\nExpect: 100-continue\r\n\r\n',
      );
      const head = await eventually(
        () => received.includes('\r\n\r\n') && received,
        10_000,
        'an answer to the request headers',
      );
      expect(head).toBe('HTTP/1.1 100 Continue\r\n\r\n');
      await new Promise<void>((resolve) => socket.write('{"session_id":', () => resolve()));

      const signalledAt = Date.now();
      gateway.child.kill('SIGTERM');
      expect(await resolvesWithin(gateway.exited, STOP_BOUND_MS, 'the exit after SIGTERM')).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(STOP_BOUND_MS);
      await resolvesWithin(closed, STOP_SLACK_MS, 'the close of the connection with the half-sent body');
    });
  });
});
