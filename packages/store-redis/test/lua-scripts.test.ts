import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { auditOutboxKeysOf } from '../src/audit-outbox.js';
import { LUA_FOLDER, SCRIPT_NAMES, type ScriptName, loadLuaScripts } from '../src/lua-scripts.js';
import { poolKeysOf } from '../src/pool-keys.js';
import { channelLeaseKeysOf } from '../src/redis-channel-leases.js';
import { handoffKeysOf } from '../src/redis-handoff-store.js';
import { permitKeysOf } from '../src/global-permits.js';
import { keptOutcomeKeysOf } from '../src/redis-kept-outcomes.js';
import { rateBucketKeyOf } from '../src/redis-rate-buckets.js';
import { replyOutboxKeysOf } from '../src/reply-outbox-keys.js';

/** Every `.lua` file under `lua/`, by its path without `.lua`. */
const luaFiles = (readdirSync(LUA_FOLDER, { recursive: true }) as string[])
  .filter((file) => file.endsWith('.lua'))
  .map((file) => file.slice(0, -'.lua'.length));
const isInclude = (file: string) => file.split('/').includes('includes');

const sourceOf = (file: string) => readFileSync(new URL(`${file}.lua`, LUA_FOLDER), 'utf8');
const headerOf = (file: string) => /^--\[\[([\s\S]*?)\]\]/.exec(sourceOf(file))?.[1] ?? '';
const familyOf = (name: ScriptName) => name.split('/')[0] as string;

/** A key as headers name it: without the deployment's `{<prefix>}:` tag. */
const named = (keys: readonly string[]) => keys.map((key) => key.replace(/^\{p\}:/, ''));

/**
 * The KEYS of each family as its store builds them: every script of the family takes exactly
 * these, in this order ...
 */
const KEYS_OF_FAMILY: Record<string, readonly string[]> = {
  pool: named(poolKeysOf('p').keys),
  'reply-outbox': named(replyOutboxKeysOf('p').keysOf('<channel>')),
  'channel-leases': named(channelLeaseKeysOf('p')),
  'kept-outcomes': named([keptOutcomeKeysOf('p').hash, keptOutcomeKeysOf('p').due]),
  handoff: named(handoffKeysOf('p', '<session>')),
  'global-permits': named(permitKeysOf('p').keys),
};
const audit = auditOutboxKeysOf('p');
/** ... or, in these families, some of these, as each call passes them. */
const KEYS_AMONG: Record<string, readonly string[]> = {
  'audit-outbox': named([
    audit.outbox,
    audit.drainers,
    audit.waitingStatuses,
    audit.statusRanks,
    audit.processingOf('<replica>'),
  ]),
  'rate-buckets': named([rateBucketKeyOf('p', '<bucket>')]),
};

/** `KEYS[i] <name> <access>`: what the script does with the key. */
const KEYS_LINE = /^ {2}KEYS\[(\d+)\]\s+(\S+)\s+(reads, writes|reads|writes|unused)\b/gm;
/** `ARGV[i] …` with a single index; ranges (`ARGV[5..7]`, `ARGV[8...]`) follow the last of them. */
const ARGV_LINE = /^ {2}ARGV\[(\d+)\]/gm;

describe('lua scripts', () => {
  describe('when loaded', () => {
    it('loads exactly the script files of lua/, each by its path, includes left out', async () => {
      const names = (await loadLuaScripts()).map((script) => script.name);
      expect(names).toEqual([...SCRIPT_NAMES]);
      expect([...names].sort()).toEqual(luaFiles.filter((file) => !isInclude(file)).sort());
    });

    it('names every include file in some script or include, so none is dead', () => {
      const included = new Set(
        luaFiles.flatMap((file) =>
          [...sourceOf(file).matchAll(/^--- @include "([^"]+)"/gm)].map((m) => m[1]),
        ),
      );
      expect(luaFiles.filter(isInclude).sort()).toEqual([...included].sort());
    });

    it('inlines every include once into each script and leaves no include line', async () => {
      for (const script of await loadLuaScripts()) {
        expect(script.source, script.name).not.toContain('@include');
        // Each family's preamble is named by the script and by the includes that need it.
        if (['pool', 'reply-outbox'].includes(familyOf(script.name)))
          expect(script.source.match(/^local K = \{/gm), script.name).toHaveLength(1);
      }
      const claim = (await loadLuaScripts()).find((script) => script.name === 'pool/claim');
      expect(claim?.source.match(/^local function placeSession\(/gm)).toHaveLength(1);
    });
  });

  describe('when read as files', () => {
    it.each([...SCRIPT_NAMES])('%s names each of its KEYS, in order, as its store builds them', (name) => {
      const header = headerOf(name);
      const keys = [...header.matchAll(KEYS_LINE)];
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.map((match) => Number(match[1]))).toEqual(keys.map((_, index) => index + 1));
      // No shorthand for a family's keys ("KEYS: the eleven pool keys"): every one has its line.
      expect(header).not.toMatch(/^\s+KEYS(\[\d+\.\.\d+\])?:/m);
      const names = keys.map((match) => match[2]);
      const family = familyOf(name);
      if (family in KEYS_OF_FAMILY) expect(names).toEqual(KEYS_OF_FAMILY[family]);
      else expect(KEYS_AMONG[family]).toEqual(expect.arrayContaining(names));
    });

    it.each([...SCRIPT_NAMES])('%s names each of its ARGV, in order, and its reply', (name) => {
      const header = headerOf(name);
      const argv = [...header.matchAll(ARGV_LINE)].map((match) => Number(match[1]));
      expect(argv).toEqual(argv.map((_, index) => index + 1));
      // A script that takes none says so.
      if (argv.length === 0) expect(header).toMatch(/^\s+ARGV\s+none$/m);
      expect(header).toMatch(/^\s+Returns/m);
    });
  });
});
