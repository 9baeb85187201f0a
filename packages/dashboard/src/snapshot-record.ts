import type { TeamRecord } from '@teamwire/core';

/*
 * How a snapshot carries a record: its long texts cut, and a mark saying which were cut and how
 * long they were. Shared by the server, which cuts, and the view model, which cuts the records
 * the live stream brings the same way, so a message looks the same however the page got it. Only
 * types come from core: this file is part of the page's bundle.
 */

/** Characters of a long text (a message's body, a description) a snapshot carries and the page shows. */
export const MAIL_TEXT_KEEP = 500;

/**
 * Characters of an approval's tool input (JSON) or plan a snapshot carries and the page shows:
 * more than a message's text, since the person decides on it, and far less than core's bounds
 * (`APPROVAL_INPUT_BYTES_MAX`, `PLAN_MAX`), so that a page of pending approvals stays small.
 */
export const APPROVAL_TEXT_KEEP = 8000;

/**
 * The texts a snapshot cut in one record, each with its full length in characters (UTF-16 code
 * units, as JavaScript counts them). A text not named here is whole.
 */
export interface SnapshotCuts {
  /** The message's text (its text blocks, joined). */
  'message.content'?: number;
  /** The message's summary. */
  'message.summary'?: number;
  /** The task's subject. */
  'task.subject'?: number;
  /** The task's description. */
  'task.description'?: number;
  /** The member's description. */
  'member.description'?: number;
  /** Why the member failed. */
  'member.error'?: number;
  /** Why a message ended without delivery (a `message.dead_lettered` record's `detail`). */
  'deadLetter.detail'?: number;
  /** A tool approval's input (JSON), cut to {@link APPROVAL_TEXT_KEEP} characters. */
  'approval.input'?: number;
  /** A plan approval's plan, cut to {@link APPROVAL_TEXT_KEEP} characters. */
  'approval.plan'?: number;
  /** Why an approval was decided so (an `approval.decided` record's `reason`). */
  'approval.reason'?: number;
  /** What a quality gate said (a `gate.refused` record's `feedback`). */
  'gate.feedback'?: number;
}

/**
 * A team-log record as a snapshot carries it: each long text cut to {@link MAIL_TEXT_KEEP}
 * characters (an approval's input or plan to {@link APPROVAL_TEXT_KEEP}), and `cut` naming what
 * was cut. A message's content is its text only, as one text
 * block (the page shows nothing else; `GET api/messages/<seq>` answers the whole text).
 */
export type SnapshotRecord = TeamRecord & {
  /** The texts cut, when any was. */
  cut?: SnapshotCuts;
};

/** `text` cut to `keep` characters, never inside a surrogate pair. */
export function cutText(text: string, keep: number): string {
  if (text.length <= keep) return text;
  const end = isHighSurrogate(text.charCodeAt(keep - 1)) ? keep - 1 : keep;
  return text.slice(0, end);
}

function isHighSurrogate(code: number): boolean {
  return (code & 0xfc00) === 0xd800;
}

/**
 * The text of a message's content (its text blocks, joined) cut to `keep` characters, and the
 * full length. Reads only as much of a long text as it keeps.
 */
export function messageText(
  content: readonly { type: string; text?: unknown }[],
  keep: number,
): { text: string; length: number } {
  let text = '';
  let length = 0;
  for (const block of content) {
    if (block.type !== 'text' || typeof block.text !== 'string') continue;
    length += block.text.length;
    if (text.length < keep) text += cutText(block.text, keep - text.length);
  }
  return { text, length };
}

/** `record` with its long texts cut (see {@link SnapshotRecord}); the record itself when none is. */
export function cutRecord(record: TeamRecord): SnapshotRecord {
  const cut: SnapshotCuts = {};
  const keep = (field: keyof SnapshotCuts, text: string, limit = MAIL_TEXT_KEEP): string => {
    if (text.length <= limit) return text;
    cut[field] = text.length;
    return cutText(text, limit);
  };
  const marked = <T extends TeamRecord>(copy: T): SnapshotRecord =>
    Object.keys(cut).length === 0 ? copy : { ...copy, cut };
  switch (record.type) {
    case 'message.queued': {
      const message = record.message;
      const only = message.content.length === 1 ? message.content[0] : undefined;
      const plain =
        (message.content.length === 0 ||
          (only?.type === 'text' && (only.text as string).length <= MAIL_TEXT_KEEP)) &&
        (message.summary === undefined || message.summary.length <= MAIL_TEXT_KEEP);
      if (plain) return record;
      const body = messageText(
        message.content as { type: string; text?: unknown }[],
        MAIL_TEXT_KEEP,
      );
      if (body.length > body.text.length) cut['message.content'] = body.length;
      const summary =
        message.summary === undefined ? undefined : keep('message.summary', message.summary);
      return marked({
        ...record,
        message: {
          ...message,
          content: [{ type: 'text', text: body.text }],
          ...(summary === undefined ? {} : { summary }),
        },
      });
    }
    case 'task': {
      const task = record.task;
      if (task.subject.length <= MAIL_TEXT_KEEP && task.description.length <= MAIL_TEXT_KEEP) {
        return record;
      }
      return marked({
        ...record,
        task: {
          ...task,
          subject: keep('task.subject', task.subject),
          description: keep('task.description', task.description),
        },
      });
    }
    case 'member': {
      const member = record.member;
      const error = member.error;
      if (member.description.length <= MAIL_TEXT_KEEP && (error?.length ?? 0) <= MAIL_TEXT_KEEP) {
        return record;
      }
      return marked({
        ...record,
        member: {
          ...member,
          description: keep('member.description', member.description),
          ...(error === undefined ? {} : { error: keep('member.error', error) }),
        },
      });
    }
    case 'message.dead_lettered': {
      const detail = record.detail;
      if (detail === undefined || detail.length <= MAIL_TEXT_KEEP) return record;
      return marked({ ...record, detail: keep('deadLetter.detail', detail) });
    }
    case 'approval.requested': {
      const { input, plan } = record.approval;
      if ((input?.length ?? 0) <= APPROVAL_TEXT_KEEP && (plan?.length ?? 0) <= APPROVAL_TEXT_KEEP) {
        return record;
      }
      return marked({
        ...record,
        approval: {
          ...record.approval,
          ...(input === undefined
            ? {}
            : { input: keep('approval.input', input, APPROVAL_TEXT_KEEP) }),
          ...(plan === undefined ? {} : { plan: keep('approval.plan', plan, APPROVAL_TEXT_KEEP) }),
        },
      });
    }
    case 'approval.decided': {
      const reason = record.reason;
      if (reason === undefined || reason.length <= MAIL_TEXT_KEEP) return record;
      return marked({ ...record, reason: keep('approval.reason', reason) });
    }
    case 'gate.refused': {
      if (record.feedback.length <= MAIL_TEXT_KEEP) return record;
      return marked({ ...record, feedback: keep('gate.feedback', record.feedback) });
    }
    default:
      return record;
  }
}

/** The whole text of the message queued at `seq`, as `GET api/messages/<seq>` answers it. */
export interface MessageBody {
  /** The seq of its `message.queued` record. */
  seq: number;
  /** The message id. */
  id: string;
  /** Its text (its text blocks, joined), whole unless `more` says otherwise. */
  text: string;
  /** Characters left out to keep the answer within its bound (0 when the text is whole). */
  more: number;
}
