import { isSwitchboardError, type SwitchboardError } from '@switchboard/core';

/** The SwitchboardError `run` throws; fails the test when it returns or throws anything else. */
export function thrown(run: () => unknown): SwitchboardError {
  try {
    run();
  } catch (error) {
    if (isSwitchboardError(error)) return error;
    throw error;
  }
  throw new Error('expected a SwitchboardError');
}
