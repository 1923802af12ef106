// Bundles the CLI and all it loads into dist/: the gateway starts from a few files instead of
// resolving, reading and compiling some thousand modules one by one (start CPU −40%, idle RSS
// −9 MB; bench/HISTORY.md#whole-path-pass-4-the-bundle). What only some configs need (a platform
// library, a store, the
// tracing SDK) stays behind a dynamic import and so in a chunk of its own, loaded when used.
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { build } from 'esbuild';

const DIST = new URL('../dist/', import.meta.url);

/** Loaded through `createRequire` (synchronously, on first use), which the bundler does not follow. */
const LOADED_BY_CREATE_REQUIRE = ['re2js', 'pino-pretty'];

/**
 * Loaded from node_modules at run time, so the gateway lists each as a dependency: native addons,
 * packages that read files shipped beside their code, and optional native accelerators that
 * discord.js, ws and pg try to load and do without.
 */
const EXTERNAL = [
  'better-sqlite3',
  '@fastify/swagger-ui',
  // Its class must keep the name `AbortSignal` (node-fetch, under grammY, checks it), which the
  // bundle may rename apart from the global; keeping every name instead (`keepNames`) cost 15–20%
  // of the CPU per request, as each closure created got its name set anew.
  'abort-controller',
  // Reads its own package.json (for its User-Agent) from `__dirname`, outside any try: bundled,
  // every call of the Feishu channel would throw.
  '@larksuiteoapi/node-sdk',
  'zlib-sync',
  'bufferutil',
  'utf-8-validate',
  'erlpack',
  'pg-native',
];

/**
 * fastify's own schema compilers (ajv, fast-json-stringify: a third of the server's code) are
 * required only by a fastify instance built without compilers; every instance of the gateway
 * names zod's (`zodSchemaController`), so the bundle holds a stand-in that says so if one ever is.
 */
const withoutFastifyCompilers = {
  name: 'without-fastify-compilers',
  setup(bundler) {
    bundler.onResolve({ filter: /^@fastify\/(ajv-compiler|fast-json-stringify-compiler)$/ }, (args) => ({
      path: args.path,
      namespace: 'left-out',
    }));
    bundler.onLoad({ filter: /.*/, namespace: 'left-out' }, (args) => ({
      contents: `module.exports = () => { throw new Error(${JSON.stringify(
        `${args.path} is not in the gateway's bundle: build fastify with zodSchemaController (@switchboard/http)`,
      )}); };`,
    }));
  },
};

/** `…/node_modules/.pnpm/x@1/node_modules/@scope/name/…` → `@scope/name`. */
const NPM_PACKAGE = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\//;

await rm(DIST, { recursive: true, force: true });
const { metafile } = await build({
  entryPoints: [new URL('../src/cli.ts', import.meta.url).pathname],
  outdir: DIST.pathname,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  plugins: [withoutFastifyCompilers],
  // The CommonJS packages inside an ES module bundle still call `require`.
  banner: {
    js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);",
  },
  // Whitespace and syntax only, identifiers as written: V8 keeps each file's source in memory (3 MB less
  // RSS). Stack traces name the functions; `node --enable-source-maps` maps them to the sources.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: true,
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
});

// Checks of what the bundle must not do, refused at build time rather than found at run time.
const problems = [];

// A dynamic import of a CommonJS module yields its default export alone in the bundle (node gives
// its named exports too): our code imports such a library statically from a module of its own
// (`undici-exports.ts`) and imports that one dynamically. Libraries doing it are listed when no
// configuration reaches the import: the OpenTelemetry resources' host detector (tracing uses the
// environment detector alone).
const UNREACHED_LAZY_CJS = [/@opentelemetry\/resources\/build\/src\/detectors\/platform\/node\/machine-id\//];
for (const [file, input] of Object.entries(metafile.inputs)) {
  if (UNREACHED_LAZY_CJS.some((pattern) => pattern.test(file))) continue;
  for (const target of input.imports)
    if (target.kind === 'dynamic-import' && metafile.inputs[target.path]?.format === 'cjs')
      problems.push(`${file} imports ${target.original ?? target.path} (CommonJS) dynamically`);
}

// `__dirname` and `__filename` do not exist in an ES module bundle. Libraries that use them are
// listed where no configuration of the gateway reaches the use: pino's and thread-stream's worker
// transports (the gateway logs in process), @discordjs/ws worker sharding, ioredis's
// `showFriendlyErrorStack`, @fastify/swagger's package.json read (caught; the document names its
// own info) and undici's (checked with `typeof`).
const USES_DIRNAME_UNREACHED = [
  'thread-stream/index.js',
  'pino/lib/transport.js',
  '@discordjs/ws/dist/index.js',
  'ioredis/built/Command.js',
  '@fastify/swagger/lib/util/read-package-json.js',
  'undici/index.js',
];
const libraryFiles = Object.keys(metafile.inputs).filter(
  (file) =>
    file.includes('node_modules/') && !USES_DIRNAME_UNREACHED.some((known) => file.endsWith(`/${known}`)),
);
// Read together, not one after the other: some thousand files.
const sources = await Promise.all(libraryFiles.map((file) => readFile(file, 'utf8')));
for (const [index, file] of libraryFiles.entries()) {
  if (/\b__(dirname|filename)\b/.test(sources[index]))
    problems.push(`${file} uses __dirname or __filename, which the bundle does not have`);
}

// ajv comes back only with a fastify instance built without zod's compilers, which would throw.
if (Object.keys(metafile.inputs).some((file) => /\/node_modules\/ajv\//.test(file)))
  problems.push(
    'ajv is in the bundle: a fastify instance is built without zodSchemaController (@switchboard/http)',
  );

// What loads from node_modules at run time comes from the gateway's own dependencies, while each
// package's tests run that package's pin: the two must name one version.
const gateway = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
const PACKAGES = new URL('../../../packages/', import.meta.url);
for (const folder of await readdir(PACKAGES)) {
  const manifest = JSON.parse(await readFile(new URL(`${folder}/package.json`, PACKAGES), 'utf8'));
  for (const name of [...EXTERNAL, ...LOADED_BY_CREATE_REQUIRE]) {
    const pinned = manifest.dependencies?.[name];
    if (pinned !== undefined && pinned !== gateway.dependencies[name])
      problems.push(
        `${name}: ${manifest.name} pins ${pinned}, the gateway ${gateway.dependencies[name] ?? 'nothing'}`,
      );
  }
}
if (problems.length > 0) throw new Error(`bundle: ${problems.join('; ')}`);

// Which npm packages each file of the bundle holds: what a test of lazy loading reads to tell
// which libraries a process loaded.
const packagesByFile = {};
for (const [file, output] of Object.entries(metafile.outputs)) {
  if (!file.endsWith('.js')) continue; // not the source maps
  const names = new Set(Object.keys(output.inputs).flatMap((input) => NPM_PACKAGE.exec(input)?.[1] ?? []));
  packagesByFile[file.slice(file.lastIndexOf('/') + 1)] = [...names].sort();
}
await writeFile(new URL('chunk-packages.json', DIST), `${JSON.stringify(packagesByFile, null, 2)}\n`);
