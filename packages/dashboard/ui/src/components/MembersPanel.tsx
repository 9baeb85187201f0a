import { useLayoutEffect, useRef, useState } from 'react';
import type { DashboardState, MemberView } from '../../../src/view-model.js';
import type { ActionName } from '../api.js';
import { LEAD_NAME } from '../format.js';
import { CutMark } from './CutMark.js';

export interface MembersPanelProps {
  state: DashboardState;
  /** Whether the page may steer (not read-only). */
  canAct: boolean;
  busy: boolean;
  act: (action: ActionName, body: object) => Promise<boolean>;
}

/** Whether the interrupt and shutdown buttons apply to a member. */
function steerable(member: MemberView): boolean {
  if (member.name === LEAD_NAME) return false;
  return (
    member.phase !== 'retired' &&
    member.phase !== 'failed' &&
    member.status !== 'retired' &&
    member.status !== 'failed'
  );
}

/** The team's members: status, presence, current tool and live output. */
export function MembersPanel({ state, canAct, busy, act }: MembersPanelProps) {
  const members = [...state.members.values()];
  return (
    <section className="panel members-panel" aria-labelledby="members-title">
      <h2 id="members-title">
        Members <span className="count">{members.length}</span>
      </h2>
      {members.length === 0 ? (
        <p className="empty">No members yet.</p>
      ) : (
        <ul className="members">
          {members.map((member) => (
            <MemberRow
              key={member.id}
              member={member}
              isOperator={member.name === state.operator}
              canSteer={canAct && member.name !== state.operator && steerable(member)}
              busy={busy}
              act={act}
            />
          ))}
        </ul>
      )}
    </section>
  );
}

interface MemberRowProps {
  member: MemberView;
  isOperator: boolean;
  canSteer: boolean;
  busy: boolean;
  act: MembersPanelProps['act'];
}

function MemberRow({ member, isOperator, canSteer, busy, act }: MemberRowProps) {
  return (
    <li
      className={`member status-${member.status}${member.active ? ' is-active' : ''}`}
      data-testid="member"
      data-name={member.name}
      data-status={member.status}
      data-active={member.active ? 'true' : 'false'}
    >
      <div className="member-head">
        <span
          className={`presence-dot${member.active ? ' on' : ''}`}
          title={member.active ? 'running now' : 'not running'}
        />
        <span
          className="member-name"
          style={member.color === undefined ? undefined : { borderColor: member.color }}
        >
          {member.name}
        </span>
        <span className="member-type" title={`provider: ${member.provider}`}>
          {member.agentType}
        </span>
        {isOperator ? <span className="tag">you</span> : null}
        <span className={`badge badge-${member.status}`} data-testid="member-status">
          {member.status}
        </span>
        {canSteer ? (
          <span className="member-actions">
            <button
              type="button"
              className="small"
              data-testid="interrupt"
              disabled={busy}
              title={`Stop ${member.name}'s current turn`}
              onClick={() => void act('interrupt', { target: member.name })}
            >
              Interrupt
            </button>
            <button
              type="button"
              className="small danger"
              data-testid="shutdown"
              disabled={busy}
              title={`Ask ${member.name} to shut down`}
              onClick={() => void act('shutdown', { target: member.name })}
            >
              Shut down
            </button>
          </span>
        ) : null}
      </div>
      {member.description !== '' ? (
        <div className="member-desc">
          {member.description}
          {member.descriptionMore > 0 ? <CutMark more={member.descriptionMore} /> : null}
        </div>
      ) : null}
      <div className="member-meta">
        {member.currentTool !== undefined ? (
          <span className="tool" data-testid="member-tool">
            running <code>{member.currentTool}</code>
          </span>
        ) : null}
        <span className="muted">
          {member.turns} {member.turns === 1 ? 'turn' : 'turns'}
        </span>
        {member.deadLetters > 0 ? (
          <span
            className="dead-count"
            data-testid="member-dead-letters"
            data-count={member.deadLetters}
            title={`messages to ${member.name} that will never be delivered`}
          >
            {member.deadLetters} {member.deadLetters === 1 ? 'dead letter' : 'dead letters'}
          </span>
        ) : null}
        {member.lastError !== undefined ? (
          <span className="error-text" title={member.lastError.message}>
            {member.lastError.code}: {member.lastError.message}
          </span>
        ) : null}
      </div>
      <MemberOutput text={member.output} name={member.name} />
    </li>
  );
}

/** The streamed text, scrolled to its end unless the reader scrolled up. */
function MemberOutput({ text, name }: { text: string; name: string }) {
  const ref = useRef<HTMLPreElement>(null);
  const stuck = useRef(true);
  const [expanded, setExpanded] = useState(false);

  useLayoutEffect(() => {
    const box = ref.current;
    if (box !== null && stuck.current) box.scrollTop = box.scrollHeight;
  });

  return (
    <div className="output-wrap">
      <pre
        ref={ref}
        className={`output${expanded ? ' expanded' : ''}`}
        data-testid="member-output"
        title={`${name}'s output`}
        onScroll={(event) => {
          const box = event.currentTarget;
          stuck.current = box.scrollHeight - box.scrollTop - box.clientHeight < 24;
        }}
      >
        {text}
      </pre>
      {text !== '' ? (
        <button
          type="button"
          className="link"
          onClick={() => setExpanded((value) => !value)}
          aria-expanded={expanded}
        >
          {expanded ? 'collapse' : 'expand'}
        </button>
      ) : null}
    </div>
  );
}
