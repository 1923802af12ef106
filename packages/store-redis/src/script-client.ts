import { assertDataFormat } from './data-format.js';
import { type ScriptName, defineLuaScripts, runScript } from './lua-scripts.js';
import {
  connect,
  createRedisClient,
  storeFailure,
  type RedisClient,
  type RedisTarget,
} from './redis-connection.js';
import { type ReplicationOptions, replicatedWrites } from './replication-wait.js';

/** A connection that runs the `lua/` scripts, and whether its user owns (and so closes) it. */
export interface ScriptClient {
  client: RedisClient;
  ownsClient: boolean;
  /**
   * Runs `name` with its KEYS and ARGV, and after a write waits for `replication` replicas; Redis
   * failures become `SB_STORE_UNAVAILABLE`.
   */
  script<Reply>(
    name: ScriptName,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<Reply>;
}

/**
 * Connects `client`, or a fail-fast connection of its own to `url`, checks the data format under
 * `prefix` and defines the scripts on it. Rejects with `SB_STORE_UNAVAILABLE` (`retryAfterMs`)
 * when Redis does not answer, with `SB_STORE_FORMAT_UNSUPPORTED` when the prefix holds another
 * build's format; an owned connection is then closed.
 */
export async function openScriptClient(options: {
  url: RedisTarget | undefined;
  client: RedisClient | undefined;
  prefix: string;
  retryAfterMs: number;
  /** Replicas that must hold a write before it is answered; none waited for without. */
  replication?: ReplicationOptions | undefined;
}): Promise<ScriptClient> {
  const { retryAfterMs } = options;
  const ownsClient = options.client === undefined;
  const client = options.client ?? createRedisClient(options.url as RedisTarget);
  // Failures are answered per call; the event must not crash the process.
  if (ownsClient) client.on('error', () => {});
  await connect(client, retryAfterMs);
  try {
    await assertDataFormat(client, options.prefix);
    await defineLuaScripts(client);
  } catch (err) {
    if (ownsClient) client.disconnect();
    throw storeFailure(err, retryAfterMs);
  }
  const replicated = replicatedWrites(client, options.prefix, options.replication, retryAfterMs);
  return {
    client,
    ownsClient,
    script: <Reply>(name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number>) =>
      replicated(name, runScript<Reply>(client, name, keys, args)).catch((err: unknown) => {
        throw storeFailure(err, retryAfterMs);
      }),
  };
}
