import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type LoadedFile, loadConfig } from '@switchboard/config';
import { DockerfileParser, Env } from 'dockerfile-ast';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubernetesObject, kustomizeBuild } from './kustomize-build.js';

// deploy/kubernetes, checked without a cluster: each kustomization is rendered (kustomize-build.ts),
// each object validated against the Kubernetes API schemas of kubernetes-models, and the pod
// checked against what the gateway and its image need, with the config loaded by the gateway's
// own loader in the environment the pod gives it.

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const KUBERNETES = join(ROOT, 'deploy', 'kubernetes');
const BASE = join(KUBERNETES, 'base');
const CLUSTER = join(KUBERNETES, 'overlays', 'cluster');
/** The uid and gid of the `node` user of the official Node images, which the image runs as. */
const NODE_UID = 1000;

/** The runtime stage's USER, WORKDIR and ENV, as the pod must match them. */
function imageFacts() {
  const instructions = DockerfileParser.parse(
    readFileSync(join(ROOT, 'docker', 'Dockerfile'), 'utf8'),
  ).getInstructions();
  const runtime = instructions.slice(
    instructions.findLastIndex((instruction) => instruction.getKeyword() === 'FROM'),
  );
  const last = (keyword: string) =>
    runtime
      .filter((instruction) => instruction.getKeyword() === keyword)
      .at(-1)
      ?.getArgumentsContent() ?? '';
  const env = new Map(
    runtime
      .filter((instruction) => instruction instanceof Env)
      .flatMap((instruction) => instruction.getProperties())
      .map((property) => [property.getName(), property.getValue() ?? ''] as const),
  );
  return { user: last('USER'), workdir: last('WORKDIR'), env };
}

const IMAGE = imageFacts();

const MODELS = {
  'apps/v1 Deployment': Deployment,
  'v1 Service': Service,
  'v1 ConfigMap': ConfigMap,
  'v1 Secret': Secret,
  'v1 PersistentVolumeClaim': PersistentVolumeClaim,
  'policy/v1 PodDisruptionBudget': PodDisruptionBudget,
};

/** The kubernetes-models object of `object`'s kind; a kind without a model here fails. */
function modelOf(object: KubernetesObject) {
  const Model = MODELS[`${object.apiVersion} ${object.kind}` as keyof typeof MODELS];
  if (Model === undefined) throw new Error(`no model for ${object.apiVersion} ${object.kind}`);
  // biome-ignore lint/suspicious/noExplicitAny: each model takes its own kind's shape
  return new Model(object as any);
}

function only<T>(objects: unknown[], Model: abstract new (...args: never[]) => T): T {
  const found = objects.filter((object): object is T => object instanceof Model);
  if (found.length !== 1) throw new Error(`expected one ${Model.name}, found ${found.length}`);
  return found[0] as T;
}

type Objects = ReturnType<typeof modelOf>[];
type PodSpec = NonNullable<NonNullable<Deployment['spec']>['template']['spec']>;

/** The ConfigMap that `container` mounts at `mountPath`, if a ConfigMap volume is mounted there. */
function configMapAt(objects: Objects, pod: PodSpec | undefined, each: IContainer, mountPath: string) {
  const mount = each.volumeMounts?.find((candidate) => candidate.mountPath === mountPath);
  const volume = pod?.volumes?.find((candidate) => candidate.name === mount?.name);
  return objects.find(
    (object): object is ConfigMap =>
      object instanceof ConfigMap && object.metadata?.name === volume?.configMap?.name,
  );
}

function container(deployment: Deployment, name: string): IContainer {
  const found = deployment.spec?.template.spec?.containers.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`the Deployment has no container ${name}`);
  return found;
}

/** A memory quantity in MB (10^6 bytes), as docs/BENCHMARKS.md gives RSS; Mi and Gi only. */
function megabytes(quantity: unknown): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(String(quantity));
  if (match === null) throw new Error(`unexpected memory quantity ${String(quantity)}`);
  return (Number(match[1]) * (match[2] === 'Gi' ? 2 ** 30 : 2 ** 20)) / 1e6;
}

const temporary: string[] = [];
afterAll(() => {
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});

type Rendered = Awaited<ReturnType<typeof render>>;

/** Renders `dir` once before the tests of the enclosing describe; the getter reads the result. */
function renderBeforeAll(dir: string): () => Rendered {
  let rendered: Rendered | undefined;
  beforeAll(async () => {
    rendered = await render(dir);
  });
  return () => {
    if (rendered === undefined) throw new Error(`${dir} was not rendered`);
    return rendered;
  };
}

/**
 * A kustomization rendered: its objects as models, the example Secret beside it, and the gateway's
 * config loaded by `loadConfig` from the ConfigMap's files laid out as the pod mounts them, in the
 * environment the gateway container gets (its `env`, and the Secret's keys through `envFrom`).
 */
async function render(dir: string) {
  const objects = kustomizeBuild(dir).map(modelOf);
  const secret = modelOf(parseYaml(readFileSync(join(dir, 'secret.example.yaml'), 'utf8'))) as Secret;
  const deployment = only(objects, Deployment);
  const pod = deployment.spec?.template.spec;
  const gateway = container(deployment, 'gateway');
  const secretValue = (name: string, key: string) => {
    expect(name, 'the Secret a pod reads').toBe(secret.metadata?.name);
    expect(Object.keys(secret.stringData ?? {}), `the Secret's keys`).toContain(key);
    return secret.stringData?.[key] as string;
  };
  const env: Record<string, string> = {};
  for (const source of gateway.envFrom ?? []) {
    expect(source.secretRef, 'envFrom names a Secret').toBeDefined();
    for (const key of Object.keys(secret.stringData ?? {}))
      env[key] = secretValue(source.secretRef?.name as string, key);
  }
  for (const variable of gateway.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    env[variable.name] =
      ref === undefined ? (variable.value ?? '') : secretValue(ref.name as string, ref.key);
  }

  // The pod's file system, as far as the ConfigMap volumes go.
  const root = mkdtempSync(join(tmpdir(), 'switchboard-kubernetes-'));
  temporary.push(root);
  for (const mount of gateway.volumeMounts ?? []) {
    const configMap = configMapAt(objects, pod, gateway, mount.mountPath);
    if (configMap === undefined) continue;
    mkdirSync(join(root, mount.mountPath), { recursive: true });
    for (const [file, text] of Object.entries(configMap.data ?? {}))
      writeFileSync(join(root, mount.mountPath, file), text);
  }
  const configPath = env.SWITCHBOARD_CONFIG ?? (IMAGE.env.get('SWITCHBOARD_CONFIG') as string);
  const config: LoadedFile = await loadConfig(join(root, configPath), { env });
  return { objects, secret, deployment, pod, gateway, env, config, configPath, secretValue };
}

describe.each([
  ['base', BASE],
  ['cluster overlay', CLUSTER],
])('every kustomization: the %s', (_name, dir) => {
  const rendered = renderBeforeAll(dir);

  it('renders objects that the Kubernetes API schemas accept, its example Secret included', () => {
    const { objects, secret } = rendered();
    for (const object of [...objects, secret]) expect(() => object.validate()).not.toThrow();
  });

  it('mounts only volumes the pod defines', () => {
    const { pod } = rendered();
    const volumes = pod?.volumes?.map((volume) => volume.name);
    for (const each of pod?.containers ?? [])
      for (const mount of each.volumeMounts ?? [])
        expect(volumes, `${each.name}: ${mount.mountPath}`).toContain(mount.name);
  });

  it('loads the shipped config with the gateway loader in the environment the pod sets', () => {
    const { config, configPath, pod } = rendered();
    // Only what the pod sets: no service-link variables of the Service `switchboard` beside them.
    expect(pod?.enableServiceLinks).toBe(false);
    expect(configPath).toBe(IMAGE.env.get('SWITCHBOARD_CONFIG'));
    expect(config.channels.length).toBeGreaterThan(0);
  });

  it('mounts the config folder where the image reads it, whole, so that edits reach the running pod', () => {
    const { gateway, pod, objects, configPath } = rendered();
    const mount = gateway.volumeMounts?.find(
      (candidate) => candidate.mountPath === posix.dirname(configPath),
    );
    expect(mount, `a mount at ${posix.dirname(configPath)}`).toBeDefined();
    // A subPath mount is never updated when the ConfigMap changes.
    expect(mount?.subPath).toBeUndefined();
    const configMap = configMapAt(objects, pod, gateway, posix.dirname(configPath));
    expect(Object.keys(configMap?.data ?? {})).toContain(posix.basename(configPath));
  });

  it('serves and probes the port the config listens on: readiness on /readyz, liveness on /healthz', () => {
    const { gateway, config, objects } = rendered();
    const port = gateway.ports?.find((candidate) => candidate.name === 'http');
    expect(port?.containerPort).toBe(config.server.port);
    expect(gateway.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    // The kubelet probes without credentials.
    expect(config.admin.protect).not.toContain('readyz');
    expect(gateway.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(gateway.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    const service = only(objects, Service);
    expect(service.spec?.ports?.map((servicePort) => servicePort.targetPort)).toEqual(['http']);
  });

  it('gives the drain its time: the grace period outlasts the preStop sleep plus shutdown.drain_timeout', () => {
    const { gateway, pod, config } = rendered();
    const preStopSeconds = gateway.lifecycle?.preStop?.sleep?.seconds;
    expect(preStopSeconds).toBeGreaterThan(0);
    expect(pod?.terminationGracePeriodSeconds).toBeGreaterThan(
      (preStopSeconds as number) + config.shutdown.drainTimeoutMs / 1000,
    );
  });

  it("runs every container as the image's non-root user, read-only, unprivileged, under RuntimeDefault seccomp", () => {
    const { pod } = rendered();
    expect(IMAGE.user).toBe('node');
    expect(pod?.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: NODE_UID,
      runAsGroup: NODE_UID,
      fsGroup: NODE_UID,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    for (const each of pod?.containers ?? [])
      expect(each.securityContext, each.name).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
  });

  it('gives the gateway a writable volume wherever its config writes, and /tmp', () => {
    const { gateway, config } = rendered();
    const writable = (gateway.volumeMounts ?? [])
      .filter((mount) => mount.readOnly !== true)
      .map((mount) => mount.mountPath);
    const paths = [config.store, config.audit].flatMap((section) =>
      section.kind === 'sqlite' && 'path' in section
        ? [posix.resolve(IMAGE.workdir, section.path as string)]
        : [],
    );
    for (const path of [...paths, '/tmp/x'])
      expect(
        writable.some((mountPath) => path.startsWith(`${mountPath}/`)),
        `${path} on a writable mount`,
      ).toBe(true);
  });

  it('requests CPU and memory for every container, and gives the gateway room above its measured RSS', () => {
    const { pod, gateway } = rendered();
    for (const each of pod?.containers ?? []) {
      expect(each.resources?.requests, each.name).toMatchObject({
        cpu: expect.any(String),
        memory: expect.any(String),
      });
      expect(each.resources?.limits?.memory, each.name).toBeDefined();
    }
    // docs/BENCHMARKS.md: 74–76 MB idle with the HTTP channel, 186 MB with 100k messages pending.
    expect(megabytes(gateway.resources?.requests?.memory)).toBeGreaterThan(76);
    expect(megabytes(gateway.resources?.limits?.memory)).toBeGreaterThan(186);
  });

  it('reloads a changed config: a container polls the mounted file and calls POST /admin/reload with the admin token', () => {
    const { deployment, pod, gateway, config, configPath, objects, secretValue } = rendered();
    const reloader = container(deployment, 'config-reload');
    const variables = new Map((reloader.env ?? []).map((variable) => [variable.name, variable]));
    expect(variables.get('SWITCHBOARD_CONFIG')?.value).toBe(configPath);
    expect(variables.get('RELOAD_URL')?.value).toBe(`http://127.0.0.1:${config.server.port}/admin/reload`);
    const token = variables.get('SWITCHBOARD_ADMIN_TOKEN')?.valueFrom?.secretKeyRef;
    expect(secretValue(token?.name as string, token?.key as string) || undefined).toBe(config.admin.token);
    // The same volume at the same path as the gateway's.
    const configMount = gateway.volumeMounts?.find((mount) => mount.mountPath === posix.dirname(configPath));
    expect(reloader.volumeMounts).toContainEqual(configMount);
    // The script it runs is config-reload.mjs, from a ConfigMap mounted where the command looks.
    const script = reloader.command?.at(-1) as string;
    const configMap = configMapAt(objects, pod, reloader, posix.dirname(script));
    expect(configMap?.data?.[posix.basename(script)]).toBe(
      readFileSync(join(BASE, 'config-reload.mjs'), 'utf8'),
    );
  });

  it('selects its own pods with the Service and the PodDisruptionBudget, which leaves a replica serving', () => {
    const { objects, deployment } = rendered();
    const labels = deployment.spec?.template.metadata?.labels ?? {};
    const service = only(objects, Service);
    const budget = only(objects, PodDisruptionBudget);
    expect(labels).toMatchObject(service.spec?.selector ?? { missing: true });
    expect(labels).toMatchObject(budget.spec?.selector?.matchLabels ?? { missing: true });
    expect(deployment.spec?.selector.matchLabels).toEqual(budget.spec?.selector?.matchLabels);
    const replicas = deployment.spec?.replicas as number;
    const maxUnavailable = budget.spec?.maxUnavailable as number;
    // One replica must stay evictable, or a node drain waits for ever.
    expect(maxUnavailable).toBe(1);
    if (replicas > 1) expect(replicas - maxUnavailable).toBeGreaterThanOrEqual(2);
  });
});

describe('the base kustomization', () => {
  const rendered = renderBeforeAll(BASE);

  it('runs one replica on SQLite, replaced only after the old one stopped, on a ReadWriteOnce claim', () => {
    const { deployment, pod, objects, config } = rendered();
    expect(config.store.kind).toBe('sqlite');
    expect(deployment.spec?.replicas).toBe(1);
    expect(deployment.spec?.strategy).toEqual({ type: 'Recreate' });
    const data = pod?.volumes?.find((volume) => volume.persistentVolumeClaim !== undefined);
    const claim = only(objects, PersistentVolumeClaim);
    expect(data?.persistentVolumeClaim?.claimName).toBe(claim.metadata?.name);
    expect(claim.spec?.accessModes).toEqual(['ReadWriteOnce']);
  });

  it("runs the settings of docker/config/switchboard.yaml, the image's own config", async () => {
    const { config, env } = rendered();
    // Each names the paths it was read from, which differ: the settings must not.
    const { readFrom: _mounted, ...mounted } = config;
    const { readFrom: _paths, ...loaded } = await loadConfig(
      join(ROOT, 'docker', 'config', 'switchboard.yaml'),
      { env },
    );
    expect(mounted).toEqual(loaded);
  });
});

describe('the cluster overlay', () => {
  const rendered = renderBeforeAll(CLUSTER);

  it('runs three replicas on Redis and PostgreSQL, rolled one at a time, with no volume claim', () => {
    const { deployment, pod, objects, config } = rendered();
    expect(config.store.kind).toBe('redis');
    expect(config.audit.kind).toBe('postgres');
    expect(deployment.spec?.replicas).toBe(3);
    expect(deployment.spec?.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    expect(objects.filter((object) => object instanceof PersistentVolumeClaim)).toEqual([]);
    expect(pod?.volumes?.filter((volume) => volume.persistentVolumeClaim !== undefined)).toEqual([]);
  });

  it('runs the settings of config/examples/cluster.yaml, which docker/compose.cluster.yaml runs', async () => {
    const { config, env } = rendered();
    // Each names the paths it was read from, which differ: the settings must not.
    const { readFrom: _mounted, ...mounted } = config;
    const { readFrom: _paths, ...loaded } = await loadConfig(
      join(ROOT, 'config', 'examples', 'cluster.yaml'),
      { env },
    );
    expect(mounted).toEqual(loaded);
  });
});

describe('kustomizeBuild', () => {
  it('refuses a kustomization feature it does not implement, rather than rendering it wrong', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-kustomize-'));
    temporary.push(dir);
    writeFileSync(join(dir, 'kustomization.yaml'), 'resources: []\ncommonLabels: { team: a }\n');
    expect(() => kustomizeBuild(dir)).toThrow(/the field "commonLabels" is not implemented/);
  });
});
