import { type FakeOpenAI, startFakeOpenAI } from '@switchboard/testkit/openai';
import { afterEach, describe, expect, it } from 'vitest';
import { post, startServe, tempDir, testConfig, useCleanups, writeConfig } from './serve-process.js';

const addCleanup = useCleanups();
let openai: FakeOpenAI | undefined;
afterEach(async () => {
  await openai?.close();
});

describe('conversation history with store: sqlite (end to end)', () => {
  // The history write is not waited for by the pipeline: it joins the commit that stores the
  // reply, and the session's next turn waits for it (PipelineResult.saved).
  it('sends each turn the exchanges before it, also after the process was killed right after an answer', async () => {
    openai = await startFakeOpenAI({ tokens: ['Hello', ' world'] });
    const dir = tempDir();
    const configPath = writeConfig(
      dir,
      testConfig(
        dir,
        `channels: [{ id: api, type: openapi }]
pipelines:
  - { id: llm, type: openai, base_url: "${openai.baseUrl}", api_key: sk-test, model: gpt-test, history_turns: 5 }
routing: { default: llm }
`,
      ),
    );
    const ask = async (url: string, text: string) => {
      const answer = await post(`${url}/v1/messages`, { session_id: 'h1', user_id: 'u1', text, wait: true });
      expect(answer.body).toMatchObject({ status: 'completed', replies: [{ text: 'Hello world' }] });
    };

    const first = await startServe({ dir, configPath });
    addCleanup(() => first.stop('SIGKILL'));
    await ask(first.url, 'one');
    await ask(first.url, 'two');
    // Answered means stored: a kill now keeps the second exchange.
    await first.stop('SIGKILL');
    const second = await startServe({ dir, configPath });
    addCleanup(() => second.stop('SIGKILL'));
    await ask(second.url, 'three');

    const sent = openai.requests.map((request) => request.body.messages);
    const exchange = (text: string) => [
      { role: 'user', content: text },
      { role: 'assistant', content: 'Hello world' },
    ];
    expect(sent).toEqual([
      [{ role: 'user', content: 'one' }],
      [...exchange('one'), { role: 'user', content: 'two' }],
      [...exchange('one'), ...exchange('two'), { role: 'user', content: 'three' }],
    ]);
  }, 60_000);
});
