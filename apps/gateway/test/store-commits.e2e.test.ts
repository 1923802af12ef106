import { metricValueAt } from '@switchboard/testkit/prometheus';
import { describe, expect, it } from 'vitest';
import { post, serveYaml, useCleanups } from './serve-process.js';

const cleanup = useCleanups();

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
      await answered(gateway.url, 'warm-up');
      // From one answer to the next: whatever the first left behind its answer lands within the
      // window, and the second's writes after its answer fall outside it, so the window holds
      // exactly one message's writes.
      await answered(gateway.url, 'first');
      const before = await commitsAt(gateway.url);
      await answered(gateway.url, 'second');
      // The journal insert; then the attempt mark, the reply sent and stored ended (its id
      // remembered, the journal removal), the final status and its audit, in one commit. No
      // status of an earlier stage is written behind the final one, no removal of the turn.
      expect((await commitsAt(gateway.url)) - before).toBe(2);
    });
  });
});
