import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadLuaScripts } from '../src/lua-scripts.js';

const luaFolder = new URL('../lua/', import.meta.url);

describe('lua scripts', () => {
  describe('when loaded', () => {
    it('inlines the reply outbox include into each of its scripts', async () => {
      const scripts = (await loadLuaScripts()).filter((script) => script.name.startsWith('reply-outbox-'));
      expect(scripts).toHaveLength(5);
      for (const script of scripts) {
        expect(script.numberOfKeys).toBe(6);
        expect(script.source).not.toContain('@include');
        expect(script.source.match(/^local K = \{/gm)).toHaveLength(1);
      }
    });

    it('inlines every include once and leaves no include line', async () => {
      const scripts = await loadLuaScripts();
      const claim = scripts.find((script) => script.name === 'claim');
      expect(claim?.numberOfKeys).toBe(11);
      expect(claim?.source).not.toContain('@include');
      // includes/pool is named by the script and needed by the others it includes: inlined once.
      expect(claim?.source.match(/^local K = \{/gm)).toHaveLength(1);
      expect(claim?.source.match(/^local function placeSession\(/gm)).toHaveLength(1);
    });

    it('loads every command file of lua/', async () => {
      const names = (await loadLuaScripts()).map((script) => script.name).sort();
      expect(names).toEqual(
        [
          'abandon',
          'claim',
          'complete',
          'enqueue',
          'locate',
          'replicas',
          'register',
          'renew',
          'retry',
          'sessions',
          'stats',
          'take-all',
          'wake',
          'outbox-applied',
          'outbox-claim',
          'outbox-push',
          'outbox-recover',
          'channel-lease-acquire',
          'channel-lease-renew',
          'channel-lease-release',
          'channel-lease-holders',
          'rate-take',
          'reply-outbox-add',
          'reply-outbox-claim',
          'reply-outbox-remove',
          'reply-outbox-retry',
          'reply-outbox-list',
          'kept-outcomes-claim',
          'kept-outcomes-forget',
        ].sort(),
      );
    });
  });

  describe('when read as files', () => {
    const files = readdirSync(luaFolder).filter((file) => file.endsWith('.lua'));
    const headerOf = (file: string) =>
      /^--\[\[([\s\S]*?)\]\]/.exec(readFileSync(new URL(file, luaFolder), 'utf8'))?.[1] ?? '';
    // The outbox's, the channel leases', the rate buckets' and the kept outcomes' scripts declare
    // every key they touch.
    const declaresAll = (file: string) =>
      file.startsWith('outbox-') ||
      file.startsWith('channel-lease-') ||
      file.startsWith('rate-') ||
      file.startsWith('kept-outcomes-');
    const isReplyOutbox = (file: string) => file.startsWith('reply-outbox-');
    const poolFiles = files.filter((file) => !declaresAll(file) && !isReplyOutbox(file));
    const declaringFiles = files.filter(declaresAll);
    const replyOutboxFiles = files.filter(isReplyOutbox);

    it.each(replyOutboxFiles)('%s opens with a header naming its KEYS, ARGV and reply', (file) => {
      const header = headerOf(file);
      expect(header).toMatch(/^\s+KEYS: the six reply-outbox keys of includes\/reply-outbox/m);
      expect(header).toMatch(/^\s+ARGV\[1\.\.3\] key prefix, channel, instance id/m);
      expect(header).toMatch(/^\s+Returns/m);
      expect(file).toMatch(/-6\.lua$/);
    });

    it.each(declaringFiles)('%s opens with a header naming each of its KEYS, its ARGV and reply', (file) => {
      const header = headerOf(file);
      const numberOfKeys = Number(/-(\d+)\.lua$/.exec(file)?.[1]);
      const keys = [...header.matchAll(/^\s+KEYS\[(\d+)\]/gm)].map((match) => Number(match[1]));
      expect(keys).toEqual(Array.from({ length: numberOfKeys }, (_, index) => index + 1));
      expect(header).toMatch(/^\s+ARGV\[1\]/m);
      expect(header).toMatch(/^\s+Returns/m);
    });

    it.each(poolFiles)('%s opens with a header naming its KEYS, ARGV and reply', (file) => {
      const header = headerOf(file);
      expect(header).toMatch(/^\s+KEYS: the eleven pool keys of includes\/pool/m);
      expect(header).toMatch(/^\s+ARGV\[1\.\.3\] key prefix, now \(ms\), replica id/m);
      expect(header).toMatch(/^\s+Returns/m);
      expect(file).toMatch(/-11\.lua$/);
    });
  });
});
