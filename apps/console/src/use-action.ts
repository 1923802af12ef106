import { useState } from 'preact/hooks';

/**
 * A button's or form's call to the admin API: `busy` while it runs, `problem` (prefixed with
 * `failure`) when it was refused, cleared at the next try.
 */
export function useAction(failure: string) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState('');

  async function run(action: () => Promise<void>): Promise<void> {
    setBusy(true);
    setProblem('');
    try {
      await action();
    } catch (error) {
      setProblem(`${failure}: ${(error as Error).message}`);
    } finally {
      setBusy(false);
    }
  }

  return { busy, problem, run };
}
