import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  HttpPipelineOptionsSchema,
  OpenAIPipelineOptionsSchema,
  ProcessPipelineOptionsSchema,
} from '../src/index.js';
import { probePipeline } from '../src/probe-pipeline.js';
import { refusedUrl, useFakeServers } from './fake-server.js';

const PROBE = { configPath: 'pipelines[1]', timeoutMs: 2000 };

describe('probePipeline', () => {
  const startServer = useFakeServers();

  describe('http', () => {
    it('is reachable on any answer to a HEAD, and posts nothing', async () => {
      const server = await startServer(() => ({ status: 404 }));
      const options = HttpPipelineOptionsSchema.parse({
        type: 'http',
        url: `${server.url}/turn?key=secret`,
      });
      expect(await probePipeline(options, PROBE)).toEqual({
        level: 'ok',
        detail: `reachable: ${server.url}/turn answered HEAD with HTTP 404`,
      });
      expect(server.requests.map((request) => request.method)).toEqual(['HEAD']);
    });

    it('fails naming the refused connection and the URL', async () => {
      const url = await refusedUrl();
      const options = HttpPipelineOptionsSchema.parse({ type: 'http', url: `${url}/turn` });
      expect(await probePipeline(options, PROBE)).toMatchObject({
        level: 'fail',
        detail: `unreachable: connect ECONNREFUSED ${url.replace('http://', '')} (${url}/turn)`,
        hint: expect.stringContaining('pipelines[1].url'),
      });
    });

    it('fails after the timeout when the endpoint never answers', async () => {
      const server = await startServer(() => 'hang');
      const options = HttpPipelineOptionsSchema.parse({ type: 'http', url: server.url });
      const result = await probePipeline(options, { ...PROBE, timeoutMs: 200 });
      expect(result).toMatchObject({
        level: 'fail',
        detail: expect.stringContaining('no answer within 200 ms'),
      });
    });
  });

  describe('openai', () => {
    const openai = (baseUrl: string) =>
      OpenAIPipelineOptionsSchema.parse({
        type: 'openai',
        base_url: baseUrl,
        api_key: 'sk-doctor-key',
        model: 'gpt-x',
      });

    it('passes when the key lists the model, asking GET /models alone', async () => {
      const server = await startServer(() => ({ status: 200, body: { data: [{ id: 'gpt-x' }] } }));
      expect(await probePipeline(openai(`${server.url}/v1`), PROBE)).toMatchObject({ level: 'ok' });
      expect(server.requests.map((request) => `${request.method} ${request.url}`)).toEqual([
        'GET /v1/models',
      ]);
      expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-doctor-key');
    });

    it('fails naming the key when it is refused, and only warns when the model is not listed', async () => {
      const refusing = await startServer(() => ({
        status: 401,
        body: { error: { message: 'bad key' } },
      }));
      const listing = await startServer(() => ({ status: 200, body: { data: [{ id: 'other' }] } }));
      expect(await probePipeline(openai(refusing.url), PROBE)).toMatchObject({
        level: 'fail',
        hint: expect.stringContaining('pipelines[1].api_key'),
      });
      expect(await probePipeline(openai(listing.url), PROBE)).toMatchObject({ level: 'warn' });
    });
  });

  describe('process', () => {
    it('finds an executable by path and by PATH, and fails on a missing command', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'switchboard-probe-'));
      const worker = join(dir, 'worker');
      writeFileSync(worker, '#!/bin/sh\n');
      chmodSync(worker, 0o755);
      const byPath = ProcessPipelineOptionsSchema.parse({ type: 'process', command: worker });
      const onPath = ProcessPipelineOptionsSchema.parse({
        type: 'process',
        command: 'worker',
        env: { PATH: dir },
      });
      const missing = ProcessPipelineOptionsSchema.parse({ type: 'process', command: 'no-such-worker-here' });
      expect(await probePipeline(byPath, PROBE)).toEqual({ level: 'ok', detail: `command ${worker}` });
      expect(await probePipeline(onPath, PROBE)).toEqual({ level: 'ok', detail: `command ${worker}` });
      expect(await probePipeline(missing, PROBE)).toMatchObject({
        level: 'fail',
        detail: 'command no-such-worker-here is not found on PATH',
        hint: expect.stringContaining('pipelines[1].command'),
      });
    });

    it('fails on a file that is not executable', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'switchboard-probe-'));
      const script = join(dir, 'script.py');
      writeFileSync(script, 'print(1)\n');
      chmodSync(script, 0o644);
      const options = ProcessPipelineOptionsSchema.parse({ type: 'process', command: script });
      expect(await probePipeline(options, PROBE)).toMatchObject({ level: 'fail' });
    });
  });
});
