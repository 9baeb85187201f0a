import { memo, useLayoutEffect, useRef, useState } from 'react';
import { type DashboardState, type MailView, selectMail } from '../../../src/view-model.js';
import { clockTime, fullTime } from '../format.js';

type Kind = MailView['kind'];

const KINDS: readonly Kind[] = [
  'message',
  'idle_notification',
  'shutdown_request',
  'task_assignment',
];

/** A string that changes whenever anything the timeline shows changes. */
export function mailKey(state: DashboardState): string {
  const mail = state.mail;
  let delivered = 0;
  for (const item of mail) if (item.delivered) delivered++;
  return `${mail.length}:${mail[0]?.id ?? ''}:${mail.at(-1)?.id ?? ''}:${delivered}`;
}

export interface MailTimelineProps {
  state: DashboardState;
  /** {@link mailKey} of the state: the timeline renders again only when it changes. */
  timelineKey: string;
  /** Every member's name, joined by newlines (a string, so that memo can compare it). */
  memberNames: string;
}

/** The team's mail, oldest first, filtered by member and kind. */
export const MailTimeline = memo(function MailTimeline({ state, memberNames }: MailTimelineProps) {
  const [member, setMember] = useState('');
  const [kind, setKind] = useState<Kind | ''>('');
  const names = memberNames === '' ? [] : memberNames.split('\n');
  const items = selectMail(state, {
    member: member === '' ? undefined : member,
    kind: kind === '' ? undefined : kind,
  });

  const listRef = useRef<HTMLOListElement>(null);
  const stuck = useRef(true);
  useLayoutEffect(() => {
    const list = listRef.current;
    if (list !== null && stuck.current) list.scrollTop = list.scrollHeight;
  });

  return (
    <section className="panel mail-panel" aria-labelledby="mail-title">
      <h2 id="mail-title">
        Mail{' '}
        <span className="count">
          {items.length === state.mail.length
            ? state.mail.length
            : `${items.length} of ${state.mail.length}`}
        </span>
      </h2>
      <div className="filters">
        <label>
          member{' '}
          <select
            data-testid="mail-filter-member"
            value={member}
            onChange={(event) => setMember(event.target.value)}
          >
            <option value="">all</option>
            {names.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          kind{' '}
          <select
            data-testid="mail-filter-kind"
            value={kind}
            onChange={(event) => setKind(event.target.value as Kind | '')}
          >
            <option value="">all</option>
            {KINDS.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
      </div>
      {items.length === 0 ? (
        <p className="empty">{state.mail.length === 0 ? 'No mail yet.' : 'No mail matches.'}</p>
      ) : (
        <ol
          className="mail-list"
          ref={listRef}
          onScroll={(event) => {
            const list = event.currentTarget;
            stuck.current = list.scrollHeight - list.scrollTop - list.clientHeight < 24;
          }}
        >
          {items.map((item) => (
            <li
              key={item.id}
              className={`mail mail-${item.kind}`}
              data-testid="mail"
              data-from={item.from}
              data-to={item.to}
              data-kind={item.kind}
            >
              <div className="mail-head">
                <time dateTime={new Date(item.at).toISOString()} title={fullTime(item.at)}>
                  {clockTime(item.at)}
                </time>
                <span className="mail-route">
                  <b>{item.from}</b> → <b>{item.to}</b>
                </span>
                <span className={`kind kind-${item.kind}`}>{item.kind}</span>
                <span
                  className={`delivery${item.delivered ? ' delivered' : ''}`}
                  title={item.delivered ? 'delivered' : 'queued'}
                >
                  {item.delivered ? '✓' : '…'}
                </span>
              </div>
              {item.summary !== undefined && item.summary !== '' ? (
                <div className="mail-summary">{item.summary}</div>
              ) : null}
              {item.text !== '' && item.text !== item.summary ? (
                <div className="mail-text">{item.text}</div>
              ) : null}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
});
