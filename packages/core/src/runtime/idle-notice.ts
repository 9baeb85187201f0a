import { createHash } from 'node:crypto';
import type { ChatMessage, TranscriptEntry } from '../chat.js';
import type { ContentBlock } from '../content.js';
import { contentText, textContent } from '../content.js';
import { textLength, utf8Length } from '../limits.js';

/**
 * Where the whole text of a cut idle notice can still be found, for the marker: a reply stays in
 * the teammate's transcript, a failure in its member listing, a retired member's kept work in
 * the `workspace` event (and in the workspace itself).
 */
export type CutTextHome = 'transcript' | 'failure' | 'workspace';

/**
 * The line that ends a cut idle notice. `omitted` counts characters as every other text limit
 * does: Unicode code points ({@link textLength}), so an emoji is one.
 */
export function truncationMarker(omitted: number, memberName: string, home: CutTextHome): string {
  const where =
    home === 'transcript'
      ? `full reply in ${memberName}'s transcript`
      : home === 'failure'
        ? `full error in list_members (${memberName}'s failure)`
        : `full list in ${memberName}'s workspace (git status)`;
  return `\n… [truncated: ${omitted} more characters; ${where}]`;
}

/** A reply that ended a member's turn, as its transcript holds it. */
export interface TurnEndReply {
  /** When the transcript entry was written (its `at`). */
  readonly at: number;
  /** The reply's text. */
  readonly text: string;
}

/**
 * The reply that ends `entries`, when their last entry is one: an assistant message asking for
 * no tool, not a rendering of team mail. Undefined for anything else (a turn still open, mail
 * not yet answered, an empty transcript).
 */
export function turnEndReply(entries: readonly TranscriptEntry[]): TurnEndReply | undefined {
  const last = entries.at(-1);
  if (last === undefined) return undefined;
  const { message } = last;
  if (message.role !== 'assistant' || message.toolCalls.length > 0 || message.source) {
    return undefined;
  }
  return { at: last.at, text: contentText(message.content) };
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * The id of the idle notice that reports the turn `memberId` ended with `reply`: the same in
 * every process (ULID-shaped: the reply's time, then 80 bits of a SHA-256 of member, time and
 * text), so a notice the member's old process wrote is recognised by the process that takes the
 * member over (a message id is queued once in a team's life), and one it never wrote is written
 * there exactly once.
 */
export function idleNoticeId(memberId: string, reply: TurnEndReply): string {
  return ulidOf(reply.at, `${memberId}\n${reply.at}\n${reply.text}`);
}

/**
 * The id of the idle notice that reports a turn of `memberId` whose transcript ended, at `at`,
 * with anything but a reply (a step limit, an interrupt, a failure): the same in every process,
 * like {@link idleNoticeId}, so the process that takes the member over can tell whether the lead
 * was told how the turn ended (see {@link turnToFinish}). Entries written together share their
 * `at`, and a member's writes are stamped one after another, so `at` names the transcript's end.
 */
export function turnEndNoticeId(memberId: string, at: number): string {
  return ulidOf(at, `${memberId}\n${at}\n\u0000turn-end`);
}

/**
 * How a teammate's durable transcript ends, for a process that starts running it with no mail or
 * task to give it: `reply` when its last turn ended with a reply (the lead is told with the
 * notice `noticeId`, if it was not yet), `unfinished` when the transcript ends within a turn the
 * lead never heard the end of (its process stopped after the turn's mail or task prompt was durable,
 * maybe after some of its steps too, and before its idle notice was): the member must finish that
 * turn. Undefined when there is nothing to do: an empty transcript, a turn whose notice was
 * queued, or one that never started. The lead's transcript is read the same way: no notice is
 * ever queued for it, so a lead turn on team mail that never ended with a reply is `unfinished`.
 * `wasQueued` answers whether a message id was ever queued in the team.
 */
export function turnToFinish(
  memberId: string,
  entries: readonly TranscriptEntry[],
  wasQueued: (messageId: string) => boolean,
): { kind: 'reply'; reply: TurnEndReply; noticeId: string } | { kind: 'unfinished' } | undefined {
  const last = entries.at(-1);
  if (last === undefined) return undefined;
  // a failure notice is named after the transcript's end whatever it ends with
  if (wasQueued(turnEndNoticeId(memberId, last.at))) return undefined;
  const reply = turnEndReply(entries);
  if (reply !== undefined) {
    const noticeId = idleNoticeId(memberId, reply);
    return wasQueued(noticeId) ? undefined : { kind: 'reply', reply, noticeId };
  }
  return endsInTurn(entries.map((entry) => entry.message)) ? { kind: 'unfinished' } : undefined;
}

/**
 * True when `messages` (a conversation, oldest first) end inside a turn that never ended with a
 * reply. A turn starts on team mail or a task prompt: one after the last reply was never
 * finished. (A forked teammate's seed alone is the lead's conversation, not a turn of its own.)
 */
export function endsInTurn(messages: readonly ChatMessage[]): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as ChatMessage;
    if (message.role === 'assistant' && message.toolCalls.length === 0 && !message.source) break;
    const kind = message.source?.kind;
    if (kind === 'team-message' || kind === 'task-claim') return true;
    if (kind === 'compaction') break;
  }
  return false;
}

/** A ULID-shaped id: `at` as its time, then 80 bits of a SHA-256 of `seed`. */
function ulidOf(atMs: number, seed: string): string {
  let time = '';
  let at = Math.max(0, Math.floor(atMs));
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[at % 32] + time;
    at = Math.floor(at / 32);
  }
  const digest = createHash('sha256').update(seed, 'utf8').digest();
  let random = '';
  // 16 characters of 5 bits: the first 10 bytes of the digest
  let bits = 0;
  let value = 0;
  for (let i = 0; i < 10; i++) {
    value = (value << 8) | (digest[i] as number);
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      random += CROCKFORD[(value >> bits) & 31];
    }
    value &= (1 << bits) - 1;
  }
  return time + random;
}

/** UTF-8 bytes of the JSON of `value`, measured as the mailbox measures a message. */
export function jsonBytes(value: unknown): number {
  return utf8Length(JSON.stringify(value) ?? '');
}

/** The bytes of what a model reads of rendered entries: their content and any tool calls. */
export function renderedBytes(entries: readonly ChatMessage[]): number {
  let bytes = 0;
  for (const entry of entries) {
    bytes += jsonBytes(entry.content);
    if (entry.role === 'assistant') bytes += jsonBytes(entry.toolCalls);
  }
  return bytes;
}

/**
 * The longest start of `text` that, ended with the marker, passes `fits`; `text` itself when it
 * fits whole. A cut never splits a surrogate pair; `marker` gets the code points cut off. `undefined` when not even the marker alone fits.
 *
 * Binary search over the kept length: `fits` is expected to be monotonic in it (a longer start
 * never measures smaller), which holds for any format that does not shrink its input.
 */
export function fitText(
  text: string,
  fits: (candidate: string) => boolean,
  marker: (omitted: number) => string,
): string | undefined {
  if (fits(text)) return text;
  const cut = (kept: number) => {
    let end = kept;
    const last = text.charCodeAt(end - 1);
    if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--;
    return text.slice(0, end) + marker(textLength(text.slice(end)));
  };
  if (!fits(cut(0))) return undefined;
  let lo = 0;
  let hi = text.length - 1;
  while (lo < hi) {
    const mid = lo + Math.ceil((hi - lo) / 2);
    if (fits(cut(mid))) lo = mid;
    else hi = mid - 1;
  }
  return cut(lo);
}

/**
 * The content of an idle notification carrying `text`, cut so that it fits `limit` twice over:
 * as the queued message (what the mailbox measures) and as the notice the lead will read, once
 * `render` (the protocol's idle line and envelope) has added whatever it adds. So a long reply
 * always reaches the lead, shortened with a marker, and never makes the teammate fail. Empty when
 * not even the marker fits: the lead then reads the protocol's fallback line.
 */
export function idleNoticeContent(options: {
  text: string;
  limit: number;
  memberName: string;
  home: CutTextHome;
  render: (content: ContentBlock[]) => readonly ChatMessage[];
}): ContentBlock[] {
  const { text, limit, render } = options;
  if (text === '') return [];
  const fitted = fitText(
    text,
    (candidate) => {
      const content = textContent(candidate);
      return jsonBytes(content) <= limit && renderedBytes(render(content)) <= limit;
    },
    (omitted) => truncationMarker(omitted, options.memberName, options.home),
  );
  return fitted === undefined ? [] : textContent(fitted);
}
