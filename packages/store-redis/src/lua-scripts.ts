import { readFile } from 'node:fs/promises';
import { packageFolder } from '@switchboard/core';
import type { RedisClient } from './redis-connection.js';

/** The Lua files, beside `src/` and `dist/`, found by the package's name (the gateway bundles it). */
export const LUA_FOLDER = new URL('lua/', packageFolder('@switchboard/store-redis', import.meta.url));

/**
 * Every script, by its path under `lua/` without `.lua`: a folder per family (the store that
 * runs it), a file per transition, named for what it does. The one list of them: the loader reads
 * these files, `ScriptName` is its type, and a test checks it against the files on disk.
 */
export const SCRIPT_NAMES = [
  'pool/enqueue',
  'pool/claim',
  'pool/complete',
  'pool/retry',
  'pool/abandon',
  'pool/renew',
  'pool/wake',
  'pool/register',
  'pool/reconfigure',
  'pool/publish-config',
  'pool/stats',
  'pool/take-all',
  'pool/locate',
  'pool/replicas',
  'pool/sessions',
  'reply-outbox/add',
  'reply-outbox/claim',
  'reply-outbox/list',
  'reply-outbox/remove',
  'reply-outbox/retry',
  'audit-outbox/push',
  'audit-outbox/claim-batch',
  'audit-outbox/forget-written',
  'audit-outbox/recover-batch',
  'channel-leases/acquire',
  'channel-leases/renew',
  'channel-leases/release',
  'channel-leases/holders',
  'rate-buckets/take',
  'rate-buckets/give-back',
  'kept-outcomes/claim',
  'kept-outcomes/forget',
  'handoff/begin',
  'handoff/hold',
  'handoff/reply',
  'handoff/end',
  'global-permits/hold',
] as const;

export type ScriptName = (typeof SCRIPT_NAMES)[number];

/**
 * The scripts whose effects need no replica before they are answered for (`replicas` of
 * `ReplicationOptions`): the reads, and the pacing buckets (a take a failover loses lets one
 * message out early; none is lost or doubled).
 */
export const ANSWERED_UNREPLICATED: ReadonlySet<ScriptName> = new Set<ScriptName>([
  'pool/stats',
  'pool/locate',
  'pool/replicas',
  'pool/sessions',
  'reply-outbox/list',
  'channel-leases/holders',
  'rate-buckets/take',
  'rate-buckets/give-back',
]);

/** The scripts of one family (`ScriptOf<'pool'>`: `'pool/claim' | …`). */
export type ScriptOf<Family extends string> = Extract<ScriptName, `${Family}/${string}`>;

/** `--- @include "<path under lua/>"` on a line of its own, as in BullMQ's commands. */
const INCLUDE_LINE = /^--- @include "([^"]+)"\s*$/gm;

/** One script, its includes inlined. */
export interface LuaScript {
  name: ScriptName;
  source: string;
}

/**
 * Inlines the includes of `source`, each once per script (a second mention is dropped, so two
 * includes may both name a third), and refuses a cycle.
 */
async function inlineIncludes(source: string, seen: Set<string>, stack: readonly string[]): Promise<string> {
  const parts: string[] = [];
  let last = 0;
  for (const match of source.matchAll(INCLUDE_LINE)) {
    const include = match[1] as string;
    parts.push(source.slice(last, match.index));
    last = match.index + match[0].length;
    if (stack.includes(include)) throw new Error(`lua include cycle: ${[...stack, include].join(' -> ')}`);
    if (seen.has(include)) continue;
    seen.add(include);
    const text = await readFile(new URL(`${include}.lua`, LUA_FOLDER), 'utf8');
    parts.push(await inlineIncludes(text, seen, [...stack, include]));
  }
  parts.push(source.slice(last));
  return parts.join('');
}

let loaded: Promise<LuaScript[]> | undefined;

/** Reads every script of `SCRIPT_NAMES` once per process. */
export function loadLuaScripts(): Promise<LuaScript[]> {
  loaded ??= Promise.all(
    SCRIPT_NAMES.map(async (name) => {
      const text = await readFile(new URL(`${name}.lua`, LUA_FOLDER), 'utf8');
      return { name, source: await inlineIncludes(text, new Set(), [name]) };
    }),
  );
  return loaded;
}

/** The ioredis command a script is defined as: prefixed, so it cannot shadow a Redis command. */
const commandNameOf = (script: ScriptName) => `switchboard:${script}`;

/**
 * Defines every script on `client` (`defineCommand`: called by SHA, sent whole once per
 * connection and again after a NOSCRIPT). No number of keys is fixed here: each call passes
 * its keys as built by the store that runs it (`runScript`).
 */
export async function defineLuaScripts(client: RedisClient): Promise<void> {
  for (const script of await loadLuaScripts()) {
    client.defineCommand(commandNameOf(script.name), { lua: script.source });
  }
}

type ScriptCommand = (...args: Array<string | number>) => Promise<unknown>;

/** Runs `name` on a client `defineLuaScripts` prepared, with `keys` as KEYS and `args` as ARGV. */
export function runScript<Reply>(
  client: RedisClient,
  name: ScriptName,
  keys: readonly string[],
  args: ReadonlyArray<string | number>,
): Promise<Reply> {
  const command = (client as unknown as Record<string, ScriptCommand>)[commandNameOf(name)] as ScriptCommand;
  return command.call(client, keys.length, ...keys, ...args) as Promise<Reply>;
}
