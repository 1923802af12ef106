/** Where the config is read from: `-c`, then `SWITCHBOARD_CONFIG`, then the quick-start file. */
export function resolveConfigPath(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return flag ?? env.SWITCHBOARD_CONFIG ?? 'config/switchboard.yaml';
}
