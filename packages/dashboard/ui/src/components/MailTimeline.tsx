import { memo, useCallback, useLayoutEffect, useRef, useState } from 'react';
import type { MessageBody } from '../../../src/snapshot-record.js';
import {
  type DashboardState,
  type DeadLetterView,
  type MailDelivery,
  type MailView,
  mailDelivery,
  selectMail,
} from '../../../src/view-model.js';
import { toApiError } from '../api.js';
import { clockTime, fullTime } from '../format.js';
import { CutMark } from './CutMark.js';

type Kind = MailView['kind'];

const KINDS = [
  'message',
  'idle_notification',
  'shutdown_request',
  'task_assignment',
  'approval_request',
  'approval_decision',
  'gate_feedback',
] as const satisfies readonly Kind[];
// every kind core has is in the filter: a new one fails the typecheck here
const everyKind: Exclude<Kind, (typeof KINDS)[number]> extends never ? true : never = true;
void everyKind;

const DELIVERIES: readonly MailDelivery[] = ['pending', 'delivered', 'dead-letter'];

/** What the timeline shows of where a message stands. */
const DELIVERY_MARKS: Record<MailDelivery, { mark: string; title: string }> = {
  pending: { mark: '…', title: 'queued' },
  delivered: { mark: '✓', title: 'delivered' },
  'dead-letter': { mark: '✗', title: 'never delivered' },
};

/** A string that changes whenever anything the timeline shows changes. */
export function mailKey(state: DashboardState): string {
  const mail = state.mail;
  let delivered = 0;
  let dead = 0;
  for (const item of mail) {
    if (item.delivered) delivered++;
    if (item.deadLetter !== undefined) dead++;
  }
  return `${mail.length}:${mail[0]?.id ?? ''}:${mail.at(-1)?.id ?? ''}:${delivered}:${dead}`;
}

export interface MailTimelineProps {
  state: DashboardState;
  /** {@link mailKey} of the state: the timeline renders again only when it changes. */
  timelineKey: string;
  /** Every member's name, joined by newlines (a string, so that memo can compare it). */
  memberNames: string;
  /** Fetches the whole text of the message queued at `seq` (a stable function). */
  loadMessage: (seq: number) => Promise<MessageBody>;
}

/** A cut message the person asked to see whole, by the seq of its record. */
type Expanded =
  | { state: 'loading' }
  | { state: 'done'; text: string; more: number }
  | { state: 'failed'; error: string };

/** The team's mail, oldest first, filtered by member and kind. */
export const MailTimeline = memo(function MailTimeline({
  state,
  memberNames,
  loadMessage,
}: MailTimelineProps) {
  const [member, setMember] = useState('');
  const [expanded, setExpanded] = useState<ReadonlyMap<number, Expanded>>(new Map());
  const expand = useCallback(
    (seq: number) => {
      const set = (value: Expanded) => setExpanded((old) => new Map(old).set(seq, value));
      set({ state: 'loading' });
      loadMessage(seq).then(
        (body) => set({ state: 'done', text: body.text, more: body.more }),
        (error: unknown) => {
          const failure = toApiError(error);
          set({ state: 'failed', error: `${failure.code}: ${failure.message}` });
        },
      );
    },
    [loadMessage],
  );
  const [kind, setKind] = useState<Kind | ''>('');
  const [delivery, setDelivery] = useState<MailDelivery | ''>('');
  const names = memberNames === '' ? [] : memberNames.split('\n');
  const items = selectMail(state, {
    member: member === '' ? undefined : member,
    kind: kind === '' ? undefined : kind,
    delivery: delivery === '' ? undefined : delivery,
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
        <label>
          delivery{' '}
          <select
            data-testid="mail-filter-delivery"
            value={delivery}
            onChange={(event) => setDelivery(event.target.value as MailDelivery | '')}
          >
            <option value="">all</option>
            {DELIVERIES.map((d) => (
              <option key={d} value={d}>
                {d}
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
              className={`mail mail-${item.kind} mail-${mailDelivery(item)}`}
              data-testid="mail"
              data-from={item.from}
              data-to={item.to}
              data-kind={item.kind}
              data-delivery={mailDelivery(item)}
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
                  className={`delivery delivery-${mailDelivery(item)}`}
                  title={DELIVERY_MARKS[mailDelivery(item)].title}
                >
                  {DELIVERY_MARKS[mailDelivery(item)].mark}
                </span>
              </div>
              {item.summary !== undefined && item.summary !== '' ? (
                <div className="mail-summary">
                  {item.summary}
                  {item.summaryMore > 0 ? <CutMark more={item.summaryMore} /> : null}
                </div>
              ) : null}
              <MailText item={item} expanded={expanded.get(item.seq)} expand={expand} />
              {item.deadLetter !== undefined ? <DeadLetterMark letter={item.deadLetter} /> : null}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
});

/** Why a message will never be delivered: core's reason, and its detail. */
function DeadLetterMark({ letter }: { letter: DeadLetterView }) {
  return (
    <div className="dead-letter" data-testid="dead-letter" data-reason={letter.reason}>
      <time dateTime={new Date(letter.at).toISOString()} title={fullTime(letter.at)}>
        {clockTime(letter.at)}
      </time>{' '}
      not delivered: <code>{letter.reason}</code>
      {letter.detail !== undefined ? (
        <>
          {' '}
          <span className="dead-letter-detail">{letter.detail}</span>
          {letter.detailMore > 0 ? <CutMark more={letter.detailMore} /> : null}
        </>
      ) : null}
    </div>
  );
}

/** A message's body: as the timeline keeps it, or whole once the person asked for it. */
function MailText({
  item,
  expanded,
  expand,
}: {
  item: MailView;
  expanded: Expanded | undefined;
  expand: (seq: number) => void;
}) {
  if (item.more === 0) {
    return item.text !== '' && item.text !== item.summary ? (
      <div className="mail-text">{item.text}</div>
    ) : null;
  }
  if (expanded?.state === 'done') {
    return (
      <div className="mail-text" data-testid="mail-text-whole">
        {expanded.text}
        {expanded.more > 0 ? (
          <CutMark more={expanded.more} title="past the size a message may have" />
        ) : null}
      </div>
    );
  }
  return (
    <div className="mail-text">
      {item.text}
      <CutMark more={item.more} />{' '}
      <button
        type="button"
        className="link"
        data-testid="mail-expand"
        disabled={expanded?.state === 'loading'}
        onClick={() => expand(item.seq)}
      >
        {expanded?.state === 'loading' ? 'loading…' : 'show all'}
      </button>
      {expanded?.state === 'failed' ? (
        <span className="error-text" data-testid="mail-expand-error">
          {' '}
          {expanded.error}
        </span>
      ) : null}
    </div>
  );
}
