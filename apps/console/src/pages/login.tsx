import { useState } from 'preact/hooks';
import { forgetToken, saveToken } from '../admin-token.js';
import { ApiError, api } from '../api.js';
import { type Scope, setScope } from '../tenant-scope.js';

/** Asks for `admin.token`; kept in sessionStorage once the admin API accepts it. */
export function LoginPage({ refused, onAccepted }: { refused: boolean; onAccepted: () => void }) {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState(refused ? 'The token was refused (401). Try again.' : '');
  const [busy, setBusy] = useState(false);

  async function submit(event: Event) {
    event.preventDefault();
    setBusy(true);
    saveToken(token);
    try {
      setScope(await api<Scope>('/admin/scope'));
      onAccepted();
    } catch (error) {
      forgetToken();
      setProblem(
        error instanceof ApiError && error.status === 401
          ? 'The token was refused (401). Try again.'
          : `The gateway did not answer: ${(error as Error).message}`,
      );
    } finally {
      setBusy(false);
    }
  }

  return (
    <main class="narrow">
      <h1>Switchboard console</h1>
      <form onSubmit={submit} class="stack">
        <label for="token">Admin token</label>
        <p class="hint" id="token-hint">
          The gateway's <code>admin.token</code>. It is kept in this tab only.
        </p>
        <input
          id="token"
          type="password"
          autocomplete="current-password"
          required
          aria-describedby="token-hint"
          aria-invalid={problem !== ''}
          value={token}
          onInput={(event) => setToken(event.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Log in
        </button>
        <p role="alert" class="problem">
          {problem}
        </p>
      </form>
    </main>
  );
}
