import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type GatewayPrivileges,
  gatewayPrivileges,
  reachableBy,
  readAccounts,
  resolveWorkerIdentity,
} from '../../src/process/run-as.js';

/** Account files as a host has them, in a fresh folder. */
function accountFiles() {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-accounts-'));
  const passwd = join(dir, 'passwd');
  const group = join(dir, 'group');
  writeFileSync(
    passwd,
    [
      'root:x:0:0:root:/root:/bin/bash',
      'gateway:x:1000:1000::/home/gateway:/bin/sh',
      'agent:x:10001:10001:Agent tools:/home/agent:/usr/sbin/nologin',
      '+::::::',
      '',
    ].join('\n'),
  );
  writeFileSync(
    group,
    ['root:x:0:', 'gateway:x:1000:', 'agent:x:10001:', 'tools:x:10002:agent', ''].join('\n'),
  );
  return readAccounts(passwd, group);
}

const ACCOUNTS = accountFiles();
const ROOT_GATEWAY: GatewayPrivileges = {
  uid: 0,
  capabilities: new Set(['CAP_SETUID', 'CAP_SETGID', 'CAP_KILL']),
};

describe('resolveWorkerIdentity', () => {
  describe('when run_as names a user of /etc/passwd', () => {
    it('takes its uid, its primary group and its home', () => {
      expect(resolveWorkerIdentity({ user: 'agent' }, ACCOUNTS, ROOT_GATEWAY)).toEqual({
        identity: { uid: 10001, gid: 10001, home: '/home/agent' },
        problems: [],
      });
    });

    it('takes a group by name or id instead of the primary one', () => {
      expect(
        resolveWorkerIdentity({ user: 'agent', group: 'tools' }, ACCOUNTS, ROOT_GATEWAY).identity,
      ).toEqual({
        uid: 10001,
        gid: 10002,
        home: '/home/agent',
      });
      expect(
        resolveWorkerIdentity({ user: 'agent', group: 4242 }, ACCOUNTS, ROOT_GATEWAY).identity?.gid,
      ).toBe(4242);
    });
  });

  describe('when /etc/passwd holds a NIS entry without ids', () => {
    it('does not take it for an account', () => {
      expect(ACCOUNTS.users.map((user) => user.name)).toEqual(['root', 'gateway', 'agent']);
    });
  });

  describe('when run_as gives ids', () => {
    it('accepts a uid as a number or a string of digits (from a ${VAR}), with its home when listed', () => {
      expect(resolveWorkerIdentity({ user: '10001' }, ACCOUNTS, ROOT_GATEWAY).identity).toEqual({
        uid: 10001,
        gid: 10001,
        home: '/home/agent',
      });
      expect(resolveWorkerIdentity({ user: 20000, group: '20000' }, ACCOUNTS, ROOT_GATEWAY).identity).toEqual(
        {
          uid: 20000,
          gid: 20000,
          home: undefined,
        },
      );
    });

    it('needs the group of a uid /etc/passwd does not list', () => {
      expect(resolveWorkerIdentity({ user: 20000 }, ACCOUNTS, ROOT_GATEWAY).problems).toEqual([
        {
          key: 'group',
          message: 'required: uid 20000 has no entry in /etc/passwd to take its primary group from',
        },
      ]);
    });
  });

  describe('when run_as cannot isolate the workers', () => {
    it('names an unknown user and an unknown group', () => {
      expect(resolveWorkerIdentity({ user: 'ghost', group: 'phantoms' }, ACCOUNTS, ROOT_GATEWAY)).toEqual({
        identity: undefined,
        problems: [
          { key: 'user', message: 'no user "ghost" in /etc/passwd' },
          { key: 'group', message: 'no group "phantoms" in /etc/group' },
        ],
      });
    });

    it('refuses root as the user or the group', () => {
      const { problems } = resolveWorkerIdentity({ user: 'root', group: 0 }, ACCOUNTS, ROOT_GATEWAY);
      expect(problems.map((problem) => problem.key)).toEqual(['user', 'group']);
      expect(problems[0]?.message).toMatch(/^root \(uid 0\)/);
      expect(problems[1]?.message).toMatch(/^root \(gid 0\)/);
    });

    it("refuses the gateway's own uid, even for a gateway allowed to switch", () => {
      const gateway: GatewayPrivileges = { ...ROOT_GATEWAY, uid: 1000 };
      expect(resolveWorkerIdentity({ user: 'gateway' }, ACCOUNTS, gateway).problems).toEqual([
        {
          key: 'user',
          message:
            "uid 1000 is the gateway's own: its workers could read the gateway's environment (/proc/<pid>/environ), configuration and database",
        },
      ]);
    });

    it('names each capability a gateway lacks to start and stop workers as another user', () => {
      const gateway: GatewayPrivileges = { uid: 1000, capabilities: new Set(['CAP_SETUID']) };
      expect(resolveWorkerIdentity({ user: 'agent' }, ACCOUNTS, gateway).problems).toEqual([
        {
          key: undefined,
          message: expect.stringMatching(
            /^the gateway \(uid 1000\) lacks CAP_SETGID, CAP_KILL to start and stop/,
          ),
        },
      ]);
    });
  });
});

describe('gatewayPrivileges', () => {
  it("reads this process's uid and which of the three capabilities it holds", () => {
    const privileges = gatewayPrivileges();
    expect(privileges.uid).toBe(process.geteuid?.());
    // The test runs as root with the default capability set (CI), or as a user without any.
    expect([...privileges.capabilities]).toEqual(
      process.geteuid?.() === 0 ? ['CAP_SETUID', 'CAP_SETGID', 'CAP_KILL'] : [],
    );
  });
});

describe('reachableBy', () => {
  const worker = { uid: 10001, gid: 10001, home: undefined };
  const stats = (mode: number, uid = 0, gid = 0) => ({ mode, uid, gid, isDirectory: () => false });
  const folder = (mode: number, uid = 0, gid = 0) => ({ mode, uid, gid, isDirectory: () => true });

  it('lets a worker read a file other users may read, or its group may', () => {
    expect(reachableBy(stats(0o100644), worker)).toBe(true);
    expect(reachableBy(stats(0o100640, 0, 10001), worker)).toBe(true);
    expect(reachableBy(stats(0o100640, 0, 1000), worker)).toBe(false);
    expect(reachableBy(stats(0o100600), worker)).toBe(false);
  });

  it('counts a file the worker owns as reachable whatever its mode: it could change it', () => {
    expect(reachableBy(stats(0o100000, 10001, 0), worker)).toBe(true);
  });

  it('lets a worker into a folder it may search without listing it', () => {
    expect(reachableBy(folder(0o40701), worker)).toBe(true);
    expect(reachableBy(folder(0o40750, 0, 10001), worker)).toBe(true);
    expect(reachableBy(folder(0o40700), worker)).toBe(false);
  });
});
