import { api } from '../api.js';
import { href } from '../hash-route.js';
import { useAction } from '../use-action.js';

/**
 * Takes `session` over from the bot (`POST /admin/sessions/{key}/handoff`; one in force already
 * is kept) and opens its conversation; says why when the gateway refuses. `onTaken` replaces
 * the navigation, for the conversation page itself.
 */
export function TakeOverButton({ session, onTaken }: { session: string; onTaken?: () => void }) {
  const { busy, problem, run } = useAction('failed');

  const takeOver = () =>
    run(async () => {
      await api(`/admin/sessions/${encodeURIComponent(session)}/handoff`, { method: 'POST', body: {} });
      if (onTaken === undefined) location.hash = href(['sessions', session]);
      else onTaken();
    });

  return (
    <span class="take-over">
      <button type="button" disabled={busy} onClick={() => void takeOver()}>
        Take over<span class="visually-hidden"> {session}</span>
      </button>
      <span class="action-state" aria-live="polite">
        {busy ? 'taking over…' : problem}
      </span>
    </span>
  );
}
