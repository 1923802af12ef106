import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createRedisClient, mayHaveRun, storeFailure } from '../src/redis-connection.js';

/** ioredis' failure of the commands a node connection had sent when it dropped. */
const cut = () =>
  Object.assign(
    new Error(
      'Reached the max retries per request limit (which is 0). Refer to "maxRetriesPerRequest" option for details.',
    ),
    { name: 'MaxRetriesPerRequestError' },
  );

/** ioredis' error once a cluster command's tries ran out, the last one failing with `last`. */
const redirectionsRanOut = (last: Error) => new Error(`Too many Cluster redirections. Last error: ${last}`);

/** The failure a cluster client gives a command while it has no connection to the cluster. */
async function notReadyFailure(): Promise<unknown> {
  // Port 1: nothing listens, so the client is still connecting when the command comes.
  const client = createRedisClient(['redis://127.0.0.1:1']);
  client.on('error', () => {});
  try {
    return await client.get('{sb-may-have-run}:key').then(
      () => new Error('answered'),
      (err: unknown) => err,
    );
  } finally {
    client.disconnect();
  }
}

describe('mayHaveRun', () => {
  it.each([
    [
      'a command refused while the connection is down',
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
    ],
    [
      'a redirection that outlasted the tries (MOVED)',
      redirectionsRanOut(new ReplyError('MOVED 1234 127.0.0.1:7001')),
    ],
    [
      'a redirection that outlasted the tries (ASK)',
      redirectionsRanOut(new ReplyError('ASK 1234 127.0.0.1:7001')),
    ],
    [
      'a slot that stayed busy (TRYAGAIN)',
      redirectionsRanOut(new ReplyError('TRYAGAIN Multiple keys request during rehashing of slot')),
    ],
    [
      'a cluster that stayed down (CLUSTERDOWN)',
      redirectionsRanOut(new ReplyError('CLUSTERDOWN The cluster is down')),
    ],
    ['an error reply', new ReplyError('ERR unknown command')],
  ])('is false for %s', (_case, cause) => {
    expect(mayHaveRun(storeFailure(cause, 250))).toBe(false);
  });

  it('is false for a command given to a cluster client not connected yet', async () => {
    const cause = await notReadyFailure();
    expect(String(cause)).toMatch(/Cluster isn't ready/);
    expect(mayHaveRun(storeFailure(cause, 250))).toBe(false);
  });

  it.each([
    ['a command timeout', new Error('Command timed out')],
    ['a connection cut after the command left', cut()],
    ['tries that ran out on a closed connection', redirectionsRanOut(new Error('Connection is closed.'))],
    ['tries that ran out on a cut connection', redirectionsRanOut(cut())],
  ])('is true for %s', (_case, cause) => {
    expect(mayHaveRun(storeFailure(cause, 250))).toBe(true);
  });
});
