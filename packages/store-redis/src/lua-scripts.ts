import { readdir, readFile } from 'node:fs/promises';
import { packageFolder } from '@switchboard/core';
import type { Redis } from 'ioredis';

/** The Lua files, beside `src/` and `dist/`, found by the package's name (the gateway bundles it). */
const LUA_FOLDER = new URL('lua/', packageFolder('@switchboard/store-redis', import.meta.url));

/** `--- @include "includes/<name>"` on a line of its own, as in BullMQ's commands. */
const INCLUDE_LINE = /^--- @include "([^"]+)"\s*$/gm;

/** One script: `<name>-<numKeys>.lua` in `lua/`, its includes inlined. */
export interface LuaScript {
  name: string;
  numberOfKeys: number;
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

/** Reads every script of `lua/` once per process. */
export function loadLuaScripts(): Promise<LuaScript[]> {
  loaded ??= (async () => {
    const files = (await readdir(LUA_FOLDER)).filter((file) => file.endsWith('.lua'));
    return Promise.all(
      files.map(async (file) => {
        const match = /^(.+)-(\d+)\.lua$/.exec(file);
        if (match === null) throw new Error(`lua/${file}: name it <command>-<numKeys>.lua`);
        const text = await readFile(new URL(file, LUA_FOLDER), 'utf8');
        return {
          name: match[1] as string,
          numberOfKeys: Number(match[2]),
          source: await inlineIncludes(text, new Set(), [file]),
        };
      }),
    );
  })();
  return loaded;
}

/** The scripts of `lua/`, by the name before `-<numKeys>.lua`. */
export type ScriptName =
  | 'enqueue'
  | 'claim'
  | 'complete'
  | 'retry'
  | 'abandon'
  | 'renew'
  | 'wake'
  | 'register'
  | 'stats'
  | 'take-all'
  | 'locate'
  | 'replicas'
  | 'sessions'
  | 'outbox-applied'
  | 'outbox-claim'
  | 'outbox-push'
  | 'outbox-recover'
  | 'channel-lease-acquire'
  | 'channel-lease-renew'
  | 'channel-lease-release'
  | 'channel-lease-holders'
  | 'rate-take'
  | 'reply-outbox-add'
  | 'reply-outbox-claim'
  | 'reply-outbox-remove'
  | 'reply-outbox-retry'
  | 'reply-outbox-list'
  | 'kept-outcomes-claim'
  | 'kept-outcomes-forget';

/** The ioredis command a script is defined as: prefixed, so it cannot shadow a Redis command. */
export const commandNameOf = (script: string) => `switchboard:${script}`;

/**
 * Defines every script on `client` (`defineCommand`: called by SHA, sent whole once per
 * connection and again after a NOSCRIPT).
 */
export async function defineLuaScripts(client: Redis): Promise<void> {
  for (const script of await loadLuaScripts()) {
    client.defineCommand(commandNameOf(script.name), {
      lua: script.source,
      numberOfKeys: script.numberOfKeys,
    });
  }
}
