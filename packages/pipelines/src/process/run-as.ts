import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * A user or a group: a name, or a numeric id (`65534`, or `"65534"` as a `${VAR}` leaves it).
 * Names are looked up in `/etc/passwd` and `/etc/group` only, not through NSS (LDAP, systemd's
 * dynamic users): give the id of an account those files do not hold.
 */
const AccountSchema = z.union([z.string().min(1), z.number().int().min(0)]);

/** `run_as` of a `process` pipeline: the user (and group) its workers run as. */
export const RunAsSchema = z.strictObject({
  user: AccountSchema,
  /** Default: the user's primary group in `/etc/passwd`. */
  group: AccountSchema.optional(),
});
export type RunAs = z.output<typeof RunAsSchema>;

/** Who a worker runs as, resolved at start from `run_as`. */
export interface WorkerIdentity {
  uid: number;
  gid: number;
  /** The user's home folder in `/etc/passwd`, the worker's `HOME`; unknown for a bare uid. */
  home: string | undefined;
}

interface UserEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

interface GroupEntry {
  name: string;
  gid: number;
}

/** The accounts names resolve against: the entries of `/etc/passwd` and `/etc/group`. */
export interface Accounts {
  users: readonly UserEntry[];
  groups: readonly GroupEntry[];
}

/** What the gateway process may do: its uid and the capabilities that switching users needs. */
export interface GatewayPrivileges {
  uid: number;
  /** Of CAP_SETUID, CAP_SETGID and CAP_KILL, those in its effective set. */
  capabilities: ReadonlySet<Capability>;
}

type Capability = 'CAP_SETUID' | 'CAP_SETGID' | 'CAP_KILL';

/**
 * What starting and stopping workers as another user takes: setuid/setgid (and clearing the
 * supplementary groups) in the spawned child, and signalling a process group of another uid.
 */
const NEEDED: ReadonlyArray<[Capability, number]> = [
  ['CAP_SETUID', 7],
  ['CAP_SETGID', 6],
  ['CAP_KILL', 5],
];

const DIGITS = /^\d+$/;

function readLines(path: string): string[][] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => line.split(':'));
}

/**
 * Reads the accounts once, at start: never per spawn. Lines without numeric ids (NIS `+` entries)
 * are skipped.
 */
export function readAccounts(passwdPath = '/etc/passwd', groupPath = '/etc/group'): Accounts {
  return {
    users: readLines(passwdPath).flatMap(([name = '', , uid = '', gid = '', , home = '']) =>
      DIGITS.test(uid) && DIGITS.test(gid) ? [{ name, uid: Number(uid), gid: Number(gid), home }] : [],
    ),
    groups: readLines(groupPath).flatMap(([name = '', , gid = '']) =>
      DIGITS.test(gid) ? [{ name, gid: Number(gid) }] : [],
    ),
  };
}

/**
 * This process's uid and switching capabilities, from the effective set in `/proc/self/status`;
 * where there is no such file (not Linux), root is taken to have them all.
 */
export function gatewayPrivileges(): GatewayPrivileges {
  const uid = process.geteuid?.() ?? -1;
  let effective: bigint | undefined;
  try {
    const line = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (line !== null) effective = BigInt(`0x${line[1]}`);
  } catch {
    effective = undefined;
  }
  const held = ([, bit]: [Capability, number]) =>
    effective === undefined ? uid === 0 : (effective & (1n << BigInt(bit))) !== 0n;
  return { uid, capabilities: new Set(NEEDED.filter(held).map(([name]) => name)) };
}

/** A problem with `run_as`, on its `user` or `group` key, or on `run_as` as a whole. */
export interface RunAsProblem {
  key: 'user' | 'group' | undefined;
  message: string;
}

/**
 * The identity `run_as` names, or every reason it cannot isolate the workers: an unknown user or
 * group, root (uid or gid 0), the gateway's own uid (the workers could read its environment
 * through `/proc`, its config and its database), or a gateway lacking the capabilities to start
 * and stop processes of another user.
 */
export function resolveWorkerIdentity(
  runAs: RunAs,
  accounts: Accounts,
  gateway: GatewayPrivileges,
): { identity: WorkerIdentity; problems: [] } | { identity: undefined; problems: RunAsProblem[] } {
  const problems: RunAsProblem[] = [];
  const userId = String(runAs.user);
  const user = DIGITS.test(userId)
    ? accounts.users.find((entry) => entry.uid === Number(userId))
    : accounts.users.find((entry) => entry.name === userId);
  const uid = DIGITS.test(userId) ? Number(userId) : user?.uid;
  if (uid === undefined) problems.push({ key: 'user', message: `no user "${userId}" in /etc/passwd` });

  let gid: number | undefined;
  if (runAs.group === undefined) {
    gid = user?.gid;
    if (gid === undefined && uid !== undefined)
      problems.push({
        key: 'group',
        message: `required: uid ${uid} has no entry in /etc/passwd to take its primary group from`,
      });
  } else {
    const groupId = String(runAs.group);
    gid = DIGITS.test(groupId)
      ? Number(groupId)
      : accounts.groups.find((entry) => entry.name === groupId)?.gid;
    if (gid === undefined) problems.push({ key: 'group', message: `no group "${groupId}" in /etc/group` });
  }

  if (uid === 0)
    problems.push({
      key: 'user',
      message: 'root (uid 0): its workers would read everything the gateway can',
    });
  else if (uid !== undefined && uid === gateway.uid)
    problems.push({
      key: 'user',
      message: `uid ${uid} is the gateway's own: its workers could read the gateway's environment (/proc/<pid>/environ), configuration and database`,
    });
  if (gid === 0)
    problems.push({
      key: 'group',
      message: "root (gid 0): its workers would read the files of root's group",
    });

  const missing = NEEDED.map(([name]) => name).filter((name) => !gateway.capabilities.has(name));
  if (missing.length > 0)
    problems.push({
      key: undefined,
      message: `the gateway (uid ${gateway.uid}) lacks ${missing.join(', ')} to start and stop its workers as another user: start it as root (docs/deploy-docker.md "Process workers as another user")`,
    });

  if (problems.length > 0 || uid === undefined || gid === undefined) return { identity: undefined, problems };
  return { identity: { uid, gid, home: user?.home }, problems: [] };
}

/** What a worker could do to one path, found by trying as the worker. */
export interface Access {
  read: boolean;
  /** Write the file; for a folder, create, rename and delete its entries (write and search). */
  write: boolean;
}

// access(2) of each path for read, and for write (folders: write and search), as the process's
// real uid: it counts ACLs, the folders above and the worker's group. It opens and changes nothing.
const ACCESS_PROBE = `
const { accessSync, constants: c, statSync } = require('node:fs');
const can = (path, mode) => { try { accessSync(path, mode); return true; } catch { return false; } };
const folder = (path) => { try { return statSync(path).isDirectory(); } catch { return false; } };
const paths = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(paths.map((path) => ({
  read: can(path, c.R_OK),
  write: can(path, folder(path) ? c.W_OK | c.X_OK : c.W_OK),
}))));
`;

/**
 * What a worker of `identity` could do to each path: one short-lived process of that identity,
 * with no environment and `/` as its folder, tries them (the mode bits alone would miss ACLs and
 * report paths under a folder it cannot enter). Throws when that process cannot run.
 */
export function accessAs(identity: WorkerIdentity, paths: readonly string[]): Access[] {
  const probe = spawnSync(process.execPath, ['-e', ACCESS_PROBE], {
    uid: identity.uid,
    gid: identity.gid,
    cwd: '/',
    env: {},
    input: JSON.stringify(paths),
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (probe.status !== 0)
    throw new Error(
      `could not try access as uid ${identity.uid}: ${probe.error?.message ?? `exit ${probe.status ?? probe.signal}: ${probe.stderr.trim()}`}`,
    );
  return JSON.parse(probe.stdout) as Access[];
}
