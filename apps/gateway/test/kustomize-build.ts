import { readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';

// `kustomize build` for exactly the features deploy/kubernetes uses, since no kustomize binary
// runs on the development machines or in CI. Anything else throws: a manifest that starts using a
// feature this does not implement fails the tests instead of being rendered wrong.

/** A Kubernetes object as YAML gives it. */
export interface KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [key: string]: unknown };
  [key: string]: unknown;
}

type Json = Record<string, unknown>;

const KUSTOMIZATION_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'configMapGenerator', 'patches']);
const GENERATOR_FIELDS = new Set(['name', 'files', 'behavior', 'options']);
/** The strategic-merge lists the manifests patch, by their `patchMergeKey` in the Kubernetes API. */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  volumes: 'name',
  env: 'name',
  volumeMounts: 'mountPath',
};

const isMap = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function identity(object: KubernetesObject): string {
  return `${object.kind}/${object.metadata.name}`;
}

function unsupported(where: string, what: string): never {
  throw new Error(`${where}: ${what} is not implemented by the tests' kustomize build`);
}

/**
 * The objects of the kustomization in `dir`: its `resources` (files, or folders holding a
 * kustomization), then its `configMapGenerator` (`files`, `behavior` create or replace,
 * `disableNameSuffixHash: true` only), then its `patches` (by `path`, strategic merge on the
 * object of the same kind and name).
 */
export function kustomizeBuild(dir: string): KubernetesObject[] {
  const file = join(dir, 'kustomization.yaml');
  const kustomization = parseYaml(readFileSync(file, 'utf8')) as Json;
  for (const field of Object.keys(kustomization))
    if (!KUSTOMIZATION_FIELDS.has(field)) unsupported(file, `the field "${field}"`);

  const objects: KubernetesObject[] = [];
  for (const resource of (kustomization.resources ?? []) as string[]) {
    const path = join(dir, resource);
    if (statSync(path).isDirectory()) objects.push(...kustomizeBuild(path));
    else
      objects.push(
        ...parseAllDocuments(readFileSync(path, 'utf8')).map(
          (document) => document.toJS() as KubernetesObject,
        ),
      );
  }

  for (const generator of (kustomization.configMapGenerator ?? []) as Json[]) {
    for (const field of Object.keys(generator))
      if (!GENERATOR_FIELDS.has(field)) unsupported(file, `configMapGenerator's "${field}"`);
    // A hashed name changes with the content: the pod would be replaced instead of the file.
    if (!isMap(generator.options) || generator.options.disableNameSuffixHash !== true)
      unsupported(file, 'a configMapGenerator without disableNameSuffixHash: true');
    const name = generator.name as string;
    const data = Object.fromEntries(
      (generator.files as string[]).map((path) => [basename(path), readFileSync(join(dir, path), 'utf8')]),
    );
    const configMap: KubernetesObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data };
    const existing = objects.findIndex((object) => identity(object) === identity(configMap));
    const behavior = generator.behavior ?? 'create';
    if (behavior === 'create' && existing < 0) objects.push(configMap);
    else if (behavior === 'replace' && existing >= 0) objects[existing] = configMap;
    else
      throw new Error(
        `${file}: configMapGenerator ${name} with behavior ${behavior} (exists: ${existing >= 0})`,
      );
  }

  for (const patch of (kustomization.patches ?? []) as Json[]) {
    if (Object.keys(patch).join() !== 'path') unsupported(file, 'a patch other than { path }');
    const patchFile = join(dir, patch.path as string);
    const body = parseYaml(readFileSync(patchFile, 'utf8')) as KubernetesObject;
    const index = objects.findIndex((object) => identity(object) === identity(body));
    if (index < 0) throw new Error(`${patchFile}: no ${identity(body)} to patch`);
    if (body.$patch === 'delete') objects.splice(index, 1);
    else objects[index] = mergePatch(objects[index] as KubernetesObject, body, patchFile) as KubernetesObject;
  }
  return objects;
}

/**
 * A strategic merge patch: maps merged key by key (`null` removes the key), the lists of
 * `MERGE_KEYS` merged item by item on their key (`$patch: delete` removes one).
 */
function mergePatch(target: Json, patch: Json, where: string): Json {
  const result: Json = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) unsupported(where, `the directive ${key} here`);
    if (value === null) delete result[key];
    else if (isMap(value))
      result[key] = mergePatch(isMap(target[key]) ? target[key] : {}, value, `${where}: ${key}`);
    else if (Array.isArray(value)) {
      const mergeKey = MERGE_KEYS[key] ?? unsupported(where, `patching the list "${key}"`);
      result[key] = mergeList((target[key] ?? []) as Json[], value as Json[], mergeKey, `${where}: ${key}`);
    } else result[key] = value;
  }
  return result;
}

function mergeList(target: Json[], patch: Json[], mergeKey: string, where: string): Json[] {
  const result = [...target];
  for (const { $patch, ...item } of patch) {
    const key = item[mergeKey];
    if (key === undefined) throw new Error(`${where}: an item without its merge key ${mergeKey}`);
    const index = result.findIndex((existing) => existing[mergeKey] === key);
    if ($patch === 'delete') {
      if (index < 0) throw new Error(`${where}: no item with ${mergeKey} ${String(key)} to delete`);
      result.splice(index, 1);
    } else if ($patch !== undefined) unsupported(where, `$patch: ${String($patch)}`);
    else if (index < 0) result.push(item);
    else result[index] = mergePatch(result[index] as Json, item, `${where}[${String(key)}]`);
  }
  return result;
}
