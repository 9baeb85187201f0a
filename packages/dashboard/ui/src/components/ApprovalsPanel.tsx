import { memo, useEffect, useState } from 'react';
import {
  type ApprovalItem,
  type DashboardState,
  decidedApprovals,
  type GateRefusalView,
  pendingApprovals,
} from '../../../src/view-model.js';
import { clockTime, duration, fullTime } from '../format.js';
import { CutMark } from './CutMark.js';

/** Decided approvals and gate refusals the panel lists (the view keeps more). */
const HISTORY_SHOWN = 20;

/** A string that changes whenever anything the panel shows changes. */
export function approvalsKey(state: DashboardState): string {
  let key = '';
  for (const a of state.approvals.values()) key += `${a.id}:${a.status}:${a.started ? 1 : 0};`;
  return `${key}|${state.gateRefusals.length}:${state.gateRefusals.at(-1)?.seq ?? 0}`;
}

/** A decision, sent as `POST api/actions/decide`; '' when it was taken, else `CODE: message`. */
export type Decide = (body: {
  approvalId: string;
  decision: 'approved' | 'rejected';
  reason?: string;
}) => Promise<string>;

export interface ApprovalsPanelProps {
  state: DashboardState;
  /** {@link approvalsKey} of the state: the panel renders again only when it changes. */
  panelKey: string;
  /** Whether the page may decide (not read-only). */
  canAct: boolean;
  /** Sends a decision (a stable function). */
  decide: Decide;
}

/** The approvals waiting for a decision, with their input or plan, then the latest decisions. */
export const ApprovalsPanel = memo(function ApprovalsPanel({
  state,
  canAct,
  decide,
}: ApprovalsPanelProps) {
  const pending = pendingApprovals(state);
  const decided = decidedApprovals(state).slice(0, HISTORY_SHOWN);
  const refusals = state.gateRefusals.slice(-HISTORY_SHOWN).reverse();
  // the time waiting and the time left tick while anything waits
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (pending.length === 0) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [pending.length]);

  return (
    <section className="panel approvals-panel" aria-labelledby="approvals-title">
      <h2 id="approvals-title">
        Approvals{' '}
        <span className="count" data-testid="approvals-pending" data-count={pending.length}>
          {pending.length} pending
        </span>
      </h2>
      {pending.length === 0 ? (
        <p className="empty">Nothing waits for a decision.</p>
      ) : (
        <ol className="approval-list">
          {pending.map((approval) => (
            <PendingApproval
              key={approval.id}
              approval={approval}
              operator={state.operator}
              now={now}
              canAct={canAct}
              decide={decide}
            />
          ))}
        </ol>
      )}
      {decided.length > 0 ? (
        <>
          <h3 className="approvals-sub">Decided</h3>
          <ol className="approval-list approval-history">
            {decided.map((approval) => (
              <DecidedApproval key={approval.id} approval={approval} />
            ))}
          </ol>
        </>
      ) : null}
      {refusals.length > 0 ? (
        <>
          <h3 className="approvals-sub">Gate refusals</h3>
          <ol className="approval-list approval-history">
            {refusals.map((refusal) => (
              <GateRefusal key={refusal.seq} refusal={refusal} />
            ))}
          </ol>
        </>
      ) : null}
    </section>
  );
});

/** What is asked: the tool called, or `plan`. */
function subject(approval: ApprovalItem): string {
  return approval.kind === 'plan' ? 'plan' : (approval.toolName ?? 'a tool');
}

/** A tool input as indented JSON when it is whole; a cut input as it is. */
function prettyInput(input: string, more: number): string {
  if (more > 0) return input;
  try {
    return JSON.stringify(JSON.parse(input), null, 2);
  } catch {
    return input;
  }
}

function PendingApproval({
  approval,
  operator,
  now,
  canAct,
  decide,
}: {
  approval: ApprovalItem;
  operator: string | undefined;
  now: number;
  canAct: boolean;
  decide: Decide;
}) {
  const [rejecting, setRejecting] = useState(false);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const asOperator = operator !== undefined && approval.approver === operator;
  const send = async (decision: 'approved' | 'rejected') => {
    setBusy(true);
    const text = reason.trim();
    const failed = await decide({
      approvalId: approval.id,
      decision,
      ...(decision === 'rejected' && text !== '' ? { reason: text } : {}),
    });
    setBusy(false);
    setError(failed);
  };
  return (
    <li
      className="approval approval-pending"
      data-testid="approval"
      data-approval-id={approval.id}
      data-kind={approval.kind}
      data-requester={approval.requester}
      data-approver={approval.approver ?? 'host'}
      data-status={approval.status}
    >
      <div className="approval-head">
        <b>{approval.requester}</b>
        <span className={`approval-what approval-${approval.kind}`} data-testid="approval-what">
          {subject(approval)}
        </span>
        {approval.taskId !== undefined ? <code>{approval.taskId}</code> : null}
        <span className="approval-times">
          <time
            dateTime={new Date(approval.requestedAt).toISOString()}
            title={`asked ${fullTime(approval.requestedAt)}`}
          >
            waiting {duration(now - approval.requestedAt)}
          </time>
          {approval.expiresAt !== undefined ? (
            <span
              className={`approval-expiry${approval.expiresAt - now < 60_000 ? ' soon' : ''}`}
              data-testid="approval-expiry"
              title={`expires (rejected) ${fullTime(approval.expiresAt)}`}
            >
              {approval.expiresAt > now
                ? ` · expires in ${duration(approval.expiresAt - now)}`
                : ' · expiring'}
            </span>
          ) : null}
        </span>
      </div>
      <div className="approval-who muted">
        approver: {approval.approver ?? 'host'}
        {canAct ? ` · you decide as ${asOperator ? operator : 'the host'}` : ''}
      </div>
      {approval.kind === 'plan' ? (
        <pre className="approval-body" data-testid="approval-plan">
          {approval.plan ?? ''}
          {approval.planMore > 0 ? <CutMark more={approval.planMore} /> : null}
        </pre>
      ) : (
        <pre className="approval-body" data-testid="approval-input">
          {prettyInput(approval.input ?? 'null', approval.inputMore)}
          {approval.inputMore > 0 ? <CutMark more={approval.inputMore} /> : null}
        </pre>
      )}
      {canAct ? (
        <div className="approval-actions">
          {rejecting ? (
            <form
              className="approval-reject"
              onSubmit={(event) => {
                event.preventDefault();
                void send('rejected');
              }}
            >
              <input
                type="text"
                data-testid="reject-reason"
                value={reason}
                placeholder="Why? (the requester reads it)"
                // biome-ignore lint/a11y/noAutofocus: the person just asked to type a reason
                autoFocus
                onChange={(event) => setReason(event.target.value)}
              />
              <button
                type="submit"
                className="small danger"
                data-testid="reject-confirm"
                disabled={busy}
              >
                Reject
              </button>
              <button
                type="button"
                className="small"
                disabled={busy}
                onClick={() => setRejecting(false)}
              >
                Cancel
              </button>
            </form>
          ) : (
            <>
              <button
                type="button"
                className="approve"
                data-testid="approve"
                disabled={busy}
                onClick={() => void send('approved')}
              >
                Approve
              </button>
              <button
                type="button"
                className="small danger"
                data-testid="reject"
                disabled={busy}
                onClick={() => setRejecting(true)}
              >
                Reject…
              </button>
            </>
          )}
        </div>
      ) : null}
      {error !== '' ? (
        <p className="action-error shown" data-testid="approval-error" role="alert">
          {error}
        </p>
      ) : null}
    </li>
  );
}

function DecidedApproval({ approval }: { approval: ApprovalItem }) {
  const at = approval.decidedAt ?? approval.requestedAt;
  return (
    <li
      className={`approval approval-decided approval-${approval.status}`}
      data-testid="approval-decided"
      data-approval-id={approval.id}
      data-status={approval.status}
      data-decider={approval.decider ?? ''}
    >
      <div className="approval-head">
        <time dateTime={new Date(at).toISOString()} title={fullTime(at)}>
          {clockTime(at)}
        </time>
        <b>{approval.requester}</b>
        <span className={`approval-what approval-${approval.kind}`}>{subject(approval)}</span>
        <span className={`decision decision-${approval.status}`}>{approval.status}</span>
        {approval.decider !== undefined ? (
          <span className="muted">by {approval.decider}</span>
        ) : null}
        {approval.started ? <span className="muted">· ran</span> : null}
      </div>
      {approval.reason !== undefined ? (
        <div className="approval-reason">
          {approval.reason}
          {approval.reasonMore > 0 ? <CutMark more={approval.reasonMore} /> : null}
        </div>
      ) : null}
    </li>
  );
}

function GateRefusal({ refusal }: { refusal: GateRefusalView }) {
  return (
    <li
      className="approval gate-refusal"
      data-testid="gate-refusal"
      data-gate={refusal.gate}
      data-member={refusal.member}
    >
      <div className="approval-head">
        <time dateTime={new Date(refusal.at).toISOString()} title={fullTime(refusal.at)}>
          {clockTime(refusal.at)}
        </time>
        <b>{refusal.member}</b>
        <span className="approval-what">
          {refusal.gate === 'task_completed' ? 'completion' : 'idle'}
        </span>
        {refusal.taskId !== undefined ? <code>{refusal.taskId}</code> : null}
        <span className="muted">refusal {refusal.attempt} in a row</span>
      </div>
      <div className="approval-reason">
        {refusal.feedback}
        {refusal.feedbackMore > 0 ? <CutMark more={refusal.feedbackMore} /> : null}
      </div>
    </li>
  );
}
