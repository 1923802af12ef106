import { type FakeOpenAI, startFakeOpenAI } from '@switchboard/testkit/openai';
import { metricValueAt } from '@switchboard/testkit/prometheus';
import { afterEach, describe, expect, it } from 'vitest';
import { post, serveYaml, useCleanups } from './serve-process.js';

const cleanup = useCleanups();
let openai: FakeOpenAI | undefined;
afterEach(async () => {
  await openai?.close();
});

/** The commits the gateway has run on its SQLite file so far (`/metrics`). */
function commitsAt(url: string): Promise<number> {
  return metricValueAt(url, 'switchboard_store_commits_total');
}

/** One message through the HTTP channel, answered by the echo pipeline, waited for. */
async function answered(url: string, session: string): Promise<void> {
  const answer = await post(`${url}/v1/messages`, {
    session_id: session,
    user_id: 'u',
    text: 'hi',
    wait: true,
  });
  expect(answer.body).toMatchObject({ status: 'completed', delivery: 'delivered' });
}

/** The commits of the second of two messages answered one after the other (see below). */
async function commitsOfOneMessage(url: string, session: (index: number) => string): Promise<number> {
  await answered(url, session(0));
  // From one answer to the next: whatever the first left behind its answer lands within the
  // window, and the second's writes after its answer fall outside it, so the window holds
  // exactly one message's writes.
  await answered(url, session(1));
  const before = await commitsAt(url);
  await answered(url, session(2));
  return (await commitsAt(url)) - before;
}

describe('SQLite commits per message (end to end)', () => {
  describe('when one message at a time is answered over the HTTP channel by the echo pipeline', () => {
    it('costs two commits: its acceptance, and the one storing its reply and ending it', async () => {
      const gateway = await serveYaml(
        `channels:
  - { id: api, type: openapi, prefix: /v1 }
pipelines:
  - { id: echo, type: echo }
routing: { default: echo }
`,
        { cleanup },
      );
      const commits = await commitsOfOneMessage(gateway.url, (index) => `echo-${index}`);
      // The journal insert; then the attempt mark, the reply sent and stored ended (its id
      // remembered, the journal removal), the final status and its audit, in one commit. No
      // status of an earlier stage is written behind the final one, no removal of the turn.
      expect(commits).toBe(2);
    });
  });

  describe('when the pipeline answers over the network and keeps history (openai)', () => {
    it('costs three commits: its acceptance, its attempt mark, and the one storing its reply and history and ending it', async () => {
      openai = await startFakeOpenAI({ tokens: ['Hello'] });
      const gateway = await serveYaml(
        `channels:
  - { id: api, type: openapi, prefix: /v1 }
pipelines:
  - { id: llm, type: openai, base_url: "${openai.baseUrl}", api_key: sk-test, model: gpt-test, history_turns: 5 }
routing: { default: llm }
`,
        { cleanup },
      );
      // The attempt mark commits before the model answers: a run that kills the process counts.
      // The history exchange joins the commit that stores the reply and ends the message.
      expect(await commitsOfOneMessage(gateway.url, (index) => `llm-${index}`)).toBe(3);
    });
  });
});
