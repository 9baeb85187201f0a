import { useCallback, useState, useSyncExternalStore } from 'react';
import { type ActionName, fetchMessage, postAction, toApiError } from './api.js';
import { ApprovalsPanel, approvalsKey, type Decide } from './components/ApprovalsPanel.js';
import { MailTimeline, mailKey } from './components/MailTimeline.js';
import { MembersPanel } from './components/MembersPanel.js';
import { SteerForms } from './components/SteerForms.js';
import { TaskGraph, taskGraphKey } from './components/TaskGraph.js';
import { TokensTable, tokensKey } from './components/TokensTable.js';
import type { DashboardStore } from './store.js';

/** The page without a token: nothing is loaded. */
export function NoToken() {
  return (
    <main className="no-token">
      <h1>teamwire dashboard</h1>
      <p data-testid="no-token">
        No access token in the URL. Open the link the server printed (it ends in{' '}
        <code>?token=…</code>).
      </p>
    </main>
  );
}

/** The dashboard of one team. */
export function App({ store }: { store: DashboardStore }) {
  useSyncExternalStore(store.subscribe, store.getTick);
  const [actionError, setActionError] = useState('');
  const [busy, setBusy] = useState(false);

  const act = useCallback(
    async (action: ActionName, body: object): Promise<boolean> => {
      setBusy(true);
      try {
        await postAction(store.token, action, body);
        setActionError('');
        return true;
      } catch (error) {
        const failure = toApiError(error);
        setActionError(`${failure.code}: ${failure.message}`);
        return false;
      } finally {
        setBusy(false);
      }
    },
    [store],
  );

  const decide = useCallback<Decide>(
    async (body) => {
      try {
        await postAction(store.token, 'decide', body);
        return '';
      } catch (error) {
        const failure = toApiError(error);
        return `${failure.code}: ${failure.message}`;
      }
    },
    [store],
  );

  const loadMessage = useCallback((seq: number) => fetchMessage(store.token, seq), [store]);

  const state = store.state;
  const canAct = state !== undefined && !state.readOnly;
  const names = state === undefined ? [] : [...state.members.values()].map((m) => m.name);

  return (
    <div className="app">
      <header className="topbar">
        <h1>
          teamwire{' '}
          <span className="team-id" data-testid="team-id">
            {state?.teamId ?? '…'}
          </span>
        </h1>
        <div className="topbar-info">
          {state === undefined ? null : state.readOnly ? (
            <span className="tag readonly" data-testid="read-only">
              read-only
            </span>
          ) : (
            <span className="who" data-testid="operator">
              you are <b>{state.operator ?? 'the operator'}</b>
            </span>
          )}
          <span className="stat" title="state of the live event stream">
            <span className={`connection connection-${store.connection}`} data-testid="connection">
              {store.connection}
            </span>
          </span>
          <span className="stat" title="snapshot reloads after a server restart">
            reloads <span data-testid="reloads">{store.reloads}</span>
          </span>
          {state !== undefined && state.missed > 0 ? (
            <span className="stat warn" data-testid="missed" title="live items the page missed">
              missed {state.missed}
            </span>
          ) : null}
        </div>
      </header>

      {store.loadError !== undefined ? (
        <div className={`banner${store.loadError.fatal ? ' fatal' : ''}`} data-testid="load-error">
          {store.loadError.fatal
            ? 'The server refused this page: '
            : 'Cannot load the team (retrying): '}
          <code>
            {store.loadError.code}: {store.loadError.message}
          </code>
        </div>
      ) : null}

      {state === undefined ? (
        store.loadError === undefined ? (
          <p className="loading">Loading the team…</p>
        ) : null
      ) : (
        <main className="grid">
          <div className="col col-wide">
            <TaskGraph state={state} graphKey={taskGraphKey(state)} />
          </div>
          <div className="col col-left">
            <MembersPanel state={state} canAct={canAct} busy={busy} act={act} />
            <TokensTable state={state} usageKey={tokensKey(state)} />
          </div>
          <div className="col col-main">
            <ApprovalsPanel
              state={state}
              panelKey={approvalsKey(state)}
              canAct={canAct}
              decide={decide}
            />
            <MailTimeline
              state={state}
              timelineKey={mailKey(state)}
              memberNames={names.join('\n')}
              loadMessage={loadMessage}
            />
          </div>
          <div className="col col-right">
            {canAct ? (
              <SteerForms
                recipients={names.filter((name) => name !== state.operator)}
                taskIds={[...state.tasks.values()]
                  .filter((t) => t.status !== 'deleted')
                  .map((t) => t.id)}
                busy={busy}
                actionError={actionError}
                act={act}
              />
            ) : (
              <section className="panel steer-panel">
                <h2>Steer</h2>
                <p className="muted">This dashboard only watches the team: steering is off.</p>
              </section>
            )}
          </div>
        </main>
      )}
    </div>
  );
}
