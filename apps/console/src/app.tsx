import { useEffect, useRef, useState } from 'preact/hooks';
import { forgetToken, readToken } from './admin-token.js';
import { ApiError, api, onAccessRefused } from './api.js';
import { href, useHashRoute } from './hash-route.js';
import { ConversationPage } from './pages/conversation.js';
import { DeadLettersPage } from './pages/dead-letters.js';
import { InboxPage } from './pages/inbox.js';
import { LoginPage } from './pages/login.js';
import { MessagePage } from './pages/message.js';
import { MessagesPage } from './pages/messages.js';
import { OverviewPage } from './pages/overview.js';
import { RoutingPage } from './pages/routing.js';
import { SessionsPage } from './pages/sessions.js';
import { type Scope, currentScope, pickTenant, pickedTenant, setScope } from './tenant-scope.js';

const PAGES = [
  { id: 'overview', title: 'Overview' },
  { id: 'messages', title: 'Messages' },
  { id: 'inbox', title: 'Inbox' },
  { id: 'dead-letters', title: 'Dead letters' },
  { id: 'routing', title: 'Routing' },
  { id: 'sessions', title: 'Sessions & queues' },
] as const;

/**
 * Access as the admin API decides it: `open` (a token accepted, or none needed on loopback),
 * `login` (a token is needed, or the one given was refused), `forbidden` (no token is configured
 * and this client is not on loopback: no token will help).
 */
type Access =
  | { state: 'checking' }
  | { state: 'open' }
  | { state: 'login'; refused: boolean }
  | { state: 'forbidden'; message: string };

export function App() {
  const [access, setAccess] = useState<Access>({ state: 'checking' });

  useEffect(() => {
    onAccessRefused((error) => {
      // A tenant token refused a gateway-wide route: the page says so; the rest stays usable.
      if (error.code === 'SB_ADMIN_TENANT_FORBIDDEN') return;
      setAccess(
        error.status === 403
          ? { state: 'forbidden', message: error.message }
          : { state: 'login', refused: readToken() !== null },
      );
    });
    // Whether this client may read, and what: the whole gateway or one tenant.
    api<Scope>('/admin/scope').then(
      (scope) => {
        setScope(scope);
        setAccess({ state: 'open' });
      },
      (error: unknown) => {
        if (!(error instanceof ApiError) || (error.status !== 401 && error.status !== 403))
          setAccess({ state: 'open' });
      },
    );
  }, []);

  if (access.state === 'checking') return <p class="loading">Loading…</p>;
  if (access.state === 'forbidden')
    return (
      <main class="narrow">
        <h1>Switchboard console</h1>
        <p role="alert">Access refused: {access.message}</p>
      </main>
    );
  if (access.state === 'login')
    return <LoginPage refused={access.refused} onAccepted={() => setAccess({ state: 'open' })} />;
  return (
    <Shell
      onLogout={
        readToken() === null
          ? undefined
          : () => {
              forgetToken();
              setAccess({ state: 'login', refused: false });
            }
      }
    />
  );
}

function Shell({ onLogout }: { onLogout: (() => void) | undefined }) {
  const { path, params } = useHashRoute();
  const [page = 'overview', id] = path;
  const heading = useRef<HTMLDivElement>(null);
  // The tenant picked (the whole gateway only): each page loads again for it.
  const [picked, setPicked] = useState(pickedTenant());
  const scope = currentScope();
  // After a navigation, focus moves to the new page, so keyboard and screen reader users start there.
  useEffect(() => {
    heading.current?.querySelector('h1')?.focus();
  }, [page, id]);

  return (
    <>
      {/* A button, not a #main link: the hash is the console's route. */}
      <button type="button" class="skip" onClick={() => heading.current?.querySelector('h1')?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <span class="brand">Switchboard</span>
        <nav aria-label="Console">
          <ul>
            {PAGES.map((entry) => (
              <li key={entry.id}>
                <a href={href([entry.id])} aria-current={entry.id === page ? 'page' : undefined}>
                  {entry.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {scope.tenant !== null ? (
          <span class="tenant">Tenant: {scope.tenant}</span>
        ) : (
          scope.tenants.length > 1 && (
            <label class="tenant">
              Tenant{' '}
              <select
                value={picked ?? ''}
                onChange={(event) => {
                  const value = (event.target as HTMLSelectElement).value;
                  pickTenant(value === '' ? undefined : value);
                  setPicked(pickedTenant());
                }}
              >
                <option value="">All tenants</option>
                {scope.tenants.map((tenant) => (
                  <option key={tenant} value={tenant}>
                    {tenant}
                  </option>
                ))}
              </select>
            </label>
          )
        )}
        {onLogout && (
          <button type="button" class="link" onClick={onLogout}>
            Log out
          </button>
        )}
      </header>
      <main id="main" ref={heading} key={picked ?? ''}>
        {page === 'overview' && <OverviewPage />}
        {page === 'messages' &&
          (id === undefined ? <MessagesPage params={params} /> : <MessagePage id={id} />)}
        {page === 'inbox' && <InboxPage />}
        {page === 'dead-letters' && <DeadLettersPage />}
        {page === 'routing' && <RoutingPage />}
        {page === 'sessions' &&
          (id === undefined ? <SessionsPage /> : <ConversationPage key={id} session={id} />)}
        {!PAGES.some((entry) => entry.id === page) && <h1 tabIndex={-1}>No such page</h1>}
      </main>
    </>
  );
}
