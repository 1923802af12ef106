import { type RequestListener, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isSwitchboardError } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpPipelineDeps, HttpPipelineOptionsSchema, createHttpPipeline } from '../src/http.js';
import { SOCKET_SLACK_BYTES, useFakeServers, useFloodServers } from './fake-server.js';
import { queryOf, rejectionOf, runContext, streamCounter } from './query.js';

const startServer = useFakeServers();

/** An http pipeline whose endpoint answers `body` with `contentType`, and the pieces it streamed. */
async function streaming(contentType: string, body: string, deps: HttpPipelineDeps = {}) {
  const server = await startServer(() => ({ status: 200, headers: { 'content-type': contentType }, body }));
  const pipeline = createHttpPipeline(
    'bot',
    HttpPipelineOptionsSchema.parse({ type: 'http', url: `${server.url}/answer` }),
    deps,
  );
  const deltas: string[] = [];
  const run = () => pipeline.run(queryOf(['hi']), { ...runContext(), stream: (delta) => deltas.push(delta) });
  return { run, deltas };
}

const ndjson = (...objects: unknown[]) => objects.map((object) => `${JSON.stringify(object)}\n`).join('');

const rawServers: Server[] = [];
afterEach(() => {
  for (const server of rawServers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** An http pipeline whose endpoint is `handler` on a node:http server of its own, closed after the test. */
async function pipelineOn(handler: RequestListener) {
  const server = createServer(handler);
  rawServers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const pipeline = createHttpPipeline(
    'bot',
    HttpPipelineOptionsSchema.parse({ type: 'http', url: `http://127.0.0.1:${port}/answer` }),
  );
  return { pipeline, server };
}

describe('createHttpPipeline streaming', () => {
  describe('when the endpoint answers application/x-ndjson', () => {
    it('passes every delta on in order and answers with the final replies', async () => {
      const { run, deltas } = await streaming(
        'application/x-ndjson',
        ndjson({ delta: 'Hel' }, { delta: 'lo' }, { replies: [{ text: 'Hello' }, { text: 'PS' }] }),
      );
      await expect(run()).resolves.toEqual({ replies: [{ text: 'Hello' }, { text: 'PS' }] });
      expect(deltas).toEqual(['Hel', 'lo']);
    });

    it('reads a last line without its newline and skips blank lines', async () => {
      const { run, deltas } = await streaming(
        'application/x-ndjson; charset=utf-8',
        `\n${JSON.stringify({ delta: 'a' })}\r\n\r\n${JSON.stringify({ replies: [{ text: 'a' }] })}`,
      );
      await expect(run()).resolves.toEqual({ replies: [{ text: 'a' }] });
      expect(deltas).toEqual(['a']);
    });
  });

  describe('when the endpoint answers text/event-stream', () => {
    it('reads the same objects from data: fields, ignoring comments and other fields', async () => {
      const body = [
        ': keep-alive',
        '',
        'event: delta',
        'data: {"delta":"Hel"}',
        '',
        'id: 2',
        'data: {"delta":"lo"}',
        '',
        'data: {"replies":',
        'data: [{"text":"Hello"}]}',
        '',
        '',
      ].join('\r\n');
      const { run, deltas } = await streaming('text/event-stream', body);
      await expect(run()).resolves.toEqual({ replies: [{ text: 'Hello' }] });
      expect(deltas).toEqual(['Hel', 'lo']);
    });
  });

  describe('when the final replies carry attachments', () => {
    it('answers them as given', async () => {
      const replies = [{ text: 'here', attachments: [{ type: 'audio', url: 'https://example.com/a.mp3' }] }];
      const { run } = await streaming('application/x-ndjson', ndjson({ delta: 'here' }, { replies }));
      await expect(run()).resolves.toEqual({ replies });
    });

    it('fails for good naming an invalid attachment field', async () => {
      const file = { type: 'file', url: 'https://example.com/a.pdf', data: 'AAAA' };
      const { run } = await streaming('application/x-ndjson', ndjson({ replies: [{ attachments: [file] }] }));
      const error = await rejectionOf(run());
      expect(error).toMatchObject({
        retryable: false,
        message: expect.stringContaining('replies[0].attachments[0].data: give url or data, not both'),
      });
    });
  });

  describe('when a line is not a delta or the replies', () => {
    it('fails for good, naming the line and what was expected', async () => {
      const { run } = await streaming('application/x-ndjson', ndjson({ delta: 'a' }, { text: 'b' }));
      const error = await rejectionOf(run());
      expect(isSwitchboardError(error, 'SB_PIPELINE_FAILED')).toBe(true);
      expect(error).toMatchObject({
        retryable: false,
        message: expect.stringMatching(/^pipeline bot: invalid stream: line 2: expected \{"delta": string\}/),
        details: { line: 2 },
      });
    });

    it('fails for good on a line that is not JSON', async () => {
      const { run } = await streaming('text/event-stream', 'data: {"delta":\n\n');
      await expect(rejectionOf(run())).resolves.toMatchObject({
        retryable: false,
        message: 'pipeline bot: invalid stream: line 2: not JSON',
      });
    });
  });

  describe('when the stream ends before the replies', () => {
    it('fails retryably as a broken stream', async () => {
      const { run, deltas } = await streaming('application/x-ndjson', ndjson({ delta: 'a' }));
      await expect(rejectionOf(run())).resolves.toMatchObject({
        code: 'SB_PIPELINE_FAILED',
        retryable: true,
        message: 'pipeline bot: broken stream: the NDJSON stream ended before its {"replies": […]}',
      });
      expect(deltas).toEqual(['a']);
    });
  });

  describe('when a line goes on past the largest answer kept', () => {
    it('fails for good naming the bound, without buffering the rest', async () => {
      const maxAnswerBytes = 64 * 1024;
      const { run, deltas } = await streaming(
        'application/x-ndjson',
        `${ndjson({ delta: 'a' })}${'x'.repeat(maxAnswerBytes + 1)}`,
        { maxAnswerBytes },
      );
      await expect(rejectionOf(run())).resolves.toMatchObject({
        code: 'SB_PIPELINE_ANSWER_TOO_LARGE',
        retryable: false,
        message: `pipeline bot: a line of the stream is larger than ${maxAnswerBytes} bytes`,
      });
      expect(deltas).toEqual(['a']);
    });

    it('counts bytes, not characters, and reads a line of multi-byte text split across chunks', async () => {
      const text = 'é€😀'.repeat(5000);
      const { run, deltas } = await streaming(
        'application/x-ndjson',
        ndjson({ delta: text }, { replies: [{ text }] }),
        { maxAnswerBytes: Buffer.byteLength(JSON.stringify({ replies: [{ text }] })) },
      );
      await expect(run()).resolves.toEqual({ replies: [{ text }] });
      expect(deltas).toEqual([text]);
    });
  });

  describe('when an event has data lines past the largest answer kept in all', () => {
    it('fails for good naming the bound', async () => {
      const line = `data: ${'y'.repeat(1000)}\n`;
      const { run } = await streaming('text/event-stream', line.repeat(70), { maxAnswerBytes: 64 * 1024 });
      await expect(rejectionOf(run())).resolves.toMatchObject({
        code: 'SB_PIPELINE_ANSWER_TOO_LARGE',
        retryable: false,
        message: `pipeline bot: an event of the stream is larger than ${64 * 1024} bytes`,
      });
    });
  });

  describe('when the backend streams deltas far past the largest answer kept', () => {
    const maxAnswerBytes = 1024 * 1024;
    /** Far more than the bound and any socket buffers: an unbounded reader reads it all. */
    const ceilingBytes = maxAnswerBytes + 64 * 1024 * 1024;
    const startFloodServer = useFloodServers();

    it.each([
      ['NDJSON', 'application/x-ndjson', (object: unknown) => `${JSON.stringify(object)}\n`],
      ['SSE', 'text/event-stream', (object: unknown) => `data: ${JSON.stringify(object)}\n\n`],
    ])(
      '%s: fails for good once the text passes the bound and cuts the connection there',
      async (_name, type, frame) => {
        const flood = await startFloodServer(
          type,
          frame({ delta: 'x'.repeat(64 * 1024) }),
          ceilingBytes,
          frame({ replies: [{ text: 'the end' }] }),
        );
        const pipeline = createHttpPipeline(
          'bot',
          HttpPipelineOptionsSchema.parse({ type: 'http', url: `${flood.url}/answer` }),
          { maxAnswerBytes },
        );
        const streamed = streamCounter();

        const error = await rejectionOf(
          pipeline.run(queryOf(['hi']), { ...runContext(), stream: streamed.stream }),
        );

        expect(error).toMatchObject({
          code: 'SB_PIPELINE_ANSWER_TOO_LARGE',
          retryable: false,
          message: `pipeline bot: the streamed text is larger than ${maxAnswerBytes} bytes`,
        });
        // Nothing past the bound reached the channel's preview.
        expect(streamed.characters).toBeLessThanOrEqual(maxAnswerBytes);
        const { written, cut } = await flood.outcome;
        expect(cut).toBe(true);
        // What the gateway read, plus at most what the loopback socket buffers held.
        expect(written).toBeLessThan(maxAnswerBytes + SOCKET_SLACK_BYTES);
      },
    );
  });

  describe('when the connection is cut mid-stream', () => {
    it('fails retryably as a broken stream', async () => {
      const { pipeline } = await pipelineOn((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/x-ndjson' });
        // A FIN inside the chunked body, once the first line is out.
        response.write(ndjson({ delta: 'a' }), () => response.socket?.end());
      });
      const error = await rejectionOf(pipeline.run(queryOf(['hi']), runContext()));
      expect(error).toMatchObject({
        code: 'SB_PIPELINE_FAILED',
        retryable: true,
        message: expect.stringContaining('pipeline bot: broken stream: '),
      });
    });
  });

  describe('when the body goes on after the replies', () => {
    /** An endpoint that sends the replies, then ends the body `endDelayMs` later; counts connections. */
    async function trailingEnd(endDelayMs: number) {
      let connections = 0;
      let ended = 0;
      const { pipeline, server } = await pipelineOn((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/x-ndjson' });
        response.write(ndjson({ delta: 'a' }, { replies: [{ text: 'a' }] }));
        const end = setTimeout(
          () => response.end(ndjson({ delta: 'ignored' }), () => (ended += 1)),
          endDelayMs,
        );
        response.once('close', () => clearTimeout(end));
      });
      server.on('connection', () => {
        connections += 1;
      });
      return { pipeline, connections: () => connections, ended: () => ended };
    }

    it('reads the rest after the answer, so that later calls reuse the connection', async () => {
      const { pipeline, connections, ended } = await trailingEnd(50);
      for (const call of [1, 2, 3, 4, 5, 6]) {
        await expect(pipeline.run(queryOf(['hi']), runContext())).resolves.toEqual({
          replies: [{ text: 'a' }],
        });
        // The turn answers at the replies; the next call comes once this body has ended.
        await eventually(() => ended() === call, 5_000, `answer ${call} ended`);
      }
      // A body cut at the replies would cost a connection per call; one may race its hand-back.
      expect(connections()).toBeLessThanOrEqual(2);
    });

    it('answers at once, without waiting for the end of a body held open', async () => {
      const { pipeline } = await trailingEnd(60_000);
      await expect(pipeline.run(queryOf(['hi']), runContext())).resolves.toEqual({
        replies: [{ text: 'a' }],
      });
    });
  });

  describe('when the body goes on past what is drained', () => {
    it('cuts a body that keeps writing after the replies instead of reading it all', async () => {
      const total = 64 * 1024 * 1024;
      let written = 0;
      let interrupted: (value: boolean) => void = () => {};
      const outcome = new Promise<boolean>((resolve) => {
        interrupted = resolve;
      });
      const { pipeline } = await pipelineOn((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/x-ndjson' });
        response.write(ndjson({ replies: [{ text: 'a' }] }));
        // 64 MiB, as fast as the client reads: all of it within the 1 s grace on an idle host.
        const chunk = `${'x'.repeat(64 * 1024 - 1)}\n`;
        const flood = () => {
          while (written < total) {
            written += chunk.length;
            if (!response.write(chunk)) return void response.once('drain', flood);
          }
          response.end(() => interrupted(false));
        };
        response.once('close', () => interrupted(written < total));
        flood();
      });
      await expect(pipeline.run(queryOf(['hi']), runContext())).resolves.toEqual({
        replies: [{ text: 'a' }],
      });
      // Cut once 128 KiB past the replies were read (and what the socket buffers held), not read to its end.
      expect(await outcome).toBe(true);
    });
  });
});
