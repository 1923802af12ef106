import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  accessAs,
  type GatewayPrivileges,
  gatewayPrivileges,
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

// Trying access as another user needs root; CI runs as root.
describe.runIf(process.getuid?.() === 0)('accessAs (as nobody)', () => {
  const nobody = { uid: 65534, gid: 65534, home: undefined };
  const folder = () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-access-'));
    chmodSync(dir, 0o755);
    return dir;
  };
  const file = (dir: string, name: string, mode: number) => {
    const path = join(dir, name);
    writeFileSync(path, 'x', { mode });
    chmodSync(path, mode);
    return path;
  };

  it('tells read and write of files apart by their mode', () => {
    const dir = folder();
    const paths = [file(dir, 'private', 0o600), file(dir, 'readable', 0o644), file(dir, 'writable', 0o622)];
    expect(accessAs(nobody, paths)).toEqual([
      { read: false, write: false },
      { read: true, write: false },
      { read: false, write: true },
    ]);
  });

  it('counts an ACL that grants the worker, and a folder it cannot enter', () => {
    const dir = folder();
    const granted = file(dir, 'granted', 0o600);
    execFileSync('setfacl', ['-m', 'u:65534:rw', granted]);
    const closed = join(dir, 'closed');
    mkdirSync(closed, { mode: 0o700 });
    const hidden = file(closed, 'readable', 0o644);
    expect(accessAs(nobody, [granted, hidden])).toEqual([
      { read: true, write: true },
      { read: false, write: false },
    ]);
  });

  it('counts write on a folder only with search', () => {
    const dir = folder();
    const writeOnly = join(dir, 'write-only');
    mkdirSync(writeOnly, { mode: 0o702 });
    chmodSync(writeOnly, 0o702);
    const open = join(dir, 'open');
    mkdirSync(open, { mode: 0o703 });
    chmodSync(open, 0o703);
    expect(accessAs(nobody, [writeOnly, open])).toEqual([
      { read: false, write: false },
      { read: false, write: true },
    ]);
  });
});
