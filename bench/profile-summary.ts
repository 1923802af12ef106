/**
 * Where the CPU of a `--cpu-prof` profile went, by package: the gateway is one bundle
 * (`apps/gateway/dist`), so each sampled function is mapped back to its source file through the
 * bundle's source maps, and a file to its workspace package (`core`, `store-redis`…) or npm
 * package (`ioredis`, `fastify`…). Prints, for the busy samples (idle and `(program)` left out):
 * each package's self time and inclusive time (a package counted once per stack), and the
 * functions with the most self time; with `--messages N`, each also in µs per message.
 *
 * The profiler samples the main thread's wall clock: a sample inside a system call counts the
 * time the thread then waited for a core as well, so on a loaded machine `writev`'s share is
 * mostly other processes running. `/proc/<pid>/stat` (user and system time) is the CPU; read the
 * shares here as where the thread's time went.
 *
 * Not a scenario of `bench/run.ts`: run a benchmark with `BENCH_CPU_PROF=1` (profiles land in
 * `bench/results/profiles/`), then, before the next build replaces the bundle and its maps,
 * `node --import tsx bench/profile-summary.ts <file.cpuprofile> [--messages N] [--top K]`.
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  /** `timeDeltas[i]`: µs from the sample before (the profile's start) to sample `i`. */
  timeDeltas: number[];
}

/** V8's own entries: not work of the process. */
const NOT_BUSY = new Set(['(idle)', '(program)']);

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { messages: { type: 'string' }, top: { type: 'string', default: '30' } },
});
const [file] = positionals;
if (file === undefined) {
  console.error(
    'usage: node --import tsx bench/profile-summary.ts <file.cpuprofile> [--messages N] [--top K]',
  );
  process.exit(2);
}
/** A positive whole number given for `--name`, or exits naming it. */
function countOption(name: string, text: string): number {
  const count = Number(text);
  if (Number.isInteger(count) && count > 0) return count;
  console.error(`--${name} must be a positive whole number, not ${JSON.stringify(text)}`);
  process.exit(2);
}
const messages = values.messages === undefined ? undefined : countOption('messages', values.messages);
const top = countOption('top', values.top);
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;

const sourceMaps = new Map<string, SourceMap | null>();
function sourceMapOf(path: string): SourceMap | null {
  let map = sourceMaps.get(path);
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')));
    } catch {
      map = null;
      if (path.endsWith('.js'))
        console.error(`no source map beside ${path} (rebuilt since?): its time counts as the file's`);
    }
    sourceMaps.set(path, map);
  }
  return map;
}

/** The source file of a frame: through the source map for a bundled file, else its URL's last part. */
function sourceOf(frame: CallFrame): string {
  if (!frame.url.startsWith('file://')) return frame.url === '' ? frame.functionName : frame.url;
  const path = fileURLToPath(frame.url);
  const entry = sourceMapOf(path)?.findEntry(frame.lineNumber, frame.columnNumber);
  return entry !== undefined && 'originalSource' in entry
    ? resolve(dirname(path), entry.originalSource)
    : path;
}

const REPOSITORY = fileURLToPath(new URL('..', import.meta.url));

/**
 * `ioredis` for a file of an npm package, `core` for one of this repository's packages/core (or
 * apps/…), `(native)` for a frame with neither a URL nor a name, else the source.
 */
function packageOf(source: string): string {
  if (source === '') return '(native)';
  const npm = source.match(/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/);
  if (npm) return npm[1] as string;
  const workspace = source.startsWith(REPOSITORY)
    ? source.slice(REPOSITORY.length).match(/^(?:packages|apps)\/([^/]+)\//)
    : null;
  return workspace ? (workspace[1] as string) : source;
}

const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parents = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
// A sample stands for the time until the next one (the last: until the profile's end), as
// DevTools counts it.
const sampled = new Map<number, number>();
let sampledAt = profile.startTime;
const sampleTimes = profile.timeDeltas.map((delta) => {
  sampledAt += delta;
  return sampledAt;
});
for (const [index, id] of profile.samples.entries()) {
  const until = sampleTimes[index + 1] ?? profile.endTime;
  sampled.set(id, (sampled.get(id) ?? 0) + Math.max(0, until - (sampleTimes[index] as number)));
}

const packages = new Map<number, string>();
function packageOfNode(id: number): string {
  let name = packages.get(id);
  if (name === undefined) {
    name = packageOf(sourceOf((nodes.get(id) as ProfileNode).callFrame));
    packages.set(id, name);
  }
  return name;
}

const add = (totals: Map<string, number>, key: string, us: number) =>
  totals.set(key, (totals.get(key) ?? 0) + us);
let busyUs = 0;
const selfByPackage = new Map<string, number>();
const inclusiveByPackage = new Map<string, number>();
const selfByFunction = new Map<string, number>();
for (const [id, us] of sampled) {
  const frame = (nodes.get(id) as ProfileNode).callFrame;
  if (NOT_BUSY.has(frame.functionName)) continue;
  busyUs += us;
  add(selfByPackage, packageOfNode(id), us);
  add(selfByFunction, `${frame.functionName || '(anonymous)'} ${packageOfNode(id)}`, us);
  const counted = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
    const name = packageOfNode(at);
    if (counted.has(name) || name === '(root)') continue;
    counted.add(name);
    add(inclusiveByPackage, name, us);
  }
}

function print(title: string, totals: Map<string, number>): void {
  console.log(`\n${title}`);
  const rows = [...totals].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [name, us] of rows) {
    const share = `${((100 * us) / busyUs).toFixed(1)}%`.padStart(6);
    const perMessage = messages === undefined ? '' : `${(us / messages).toFixed(1).padStart(8)} µs/msg`;
    console.log(`${share}${perMessage}  ${name}`);
  }
}

console.log(`${file}: ${(busyUs / 1000).toFixed(0)} ms busy`);
print('self time by package', selfByPackage);
print('inclusive time by package (each package once per stack)', inclusiveByPackage);
print('self time by function', selfByFunction);
