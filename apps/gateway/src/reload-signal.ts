/**
 * SIGHUP ("reload the routing rules") from the first line of the CLI on. Node's default action
 * for SIGHUP ends the process, and an operator or a deploy tool may send one while `serve` still
 * loads its modules, reads the config or connects channels (a reload sent early must not kill a starting gateway). This module imports
 * nothing, so the CLI can install it before loading the rest; a SIGHUP that arrives before
 * anyone handles it is held and handed over later.
 */
export interface ReloadSignal {
  /** Calls `reload` on every SIGHUP from now on, and once at once if one was held. */
  handleWith(reload: () => void): void;
  /** Stops holding SIGHUP: for commands that reload nothing, it ends the process again. */
  release(): void;
}

/** Starts listening for SIGHUP. */
export function holdReloadSignal(): ReloadSignal {
  let reload: (() => void) | undefined;
  let held = false;
  const onSignal = () => {
    if (reload === undefined) held = true;
    else reload();
  };
  process.on('SIGHUP', onSignal);
  return {
    handleWith(handler) {
      reload = handler;
      if (held) {
        held = false;
        handler();
      }
    },
    release() {
      process.off('SIGHUP', onSignal);
    },
  };
}
