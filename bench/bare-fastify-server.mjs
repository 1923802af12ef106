// The floor of the HTTP benchmark: a bare fastify route that answers `POST /v1/messages` with the
// body the gateway sends for a completed echo turn, and does nothing else — no validation, no
// queue, no store. Run as its own process like the gateway, so both are measured alike. Plain
// JavaScript so that it runs on bare `node`; it logs the same `listening` line as the gateway.
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';

const app = Fastify({ logger: false });

app.post('/v1/messages', async (request) => {
  const id = randomUUID();
  return {
    id,
    status: 'completed',
    pipeline: 'echo',
    rule: null,
    turn: id,
    replies: [{ text: request.body.text }],
    error: null,
  };
});

const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ msg: 'listening', address })}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
