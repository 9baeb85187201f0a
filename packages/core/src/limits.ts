/**
 * Bounds shared by the record schemas, their fast path, the team state and the team tools (the
 * value sets of the records live in `record-values.ts`). The state enforces every input bound on
 * its commands, so each caller (the TeamService, a tool, host code driving `TeamState` directly)
 * meets the same limits; the tool schemas import the same constants so a model learns them up
 * front.
 *
 * Text is measured in Unicode code points, the unit zod's `.min()`/`.max()` count (a surrogate
 * pair, such as an emoji, is one; a lone surrogate is one too): see {@link textLength}.
 */

/** Member names are at most this many characters. */
export const MEMBER_NAME_MAX = 64;
/** A member's description (its role, in a sentence or two) holds at most this many characters. */
export const MEMBER_DESCRIPTION_MAX = 2000;
/** An agent type name (a key of the agent registry) has 1 to this many characters. */
export const AGENT_TYPE_MAX = 64;
/** A member's `provider` (`<provider>:<modelId>` of its model) holds at most this many characters. */
export const MEMBER_PROVIDER_MAX = 256;
/** A member's display color holds at most this many characters. */
export const MEMBER_COLOR_MAX = 32;
/** Why a member failed (`error` of a `failed` member) holds at most this many characters. */
export const MEMBER_ERROR_MAX = 2000;

/** Task ids: `task-1`, `task-2`, ... numbered per team. */
export const TASK_ID_PATTERN = /^task-[1-9][0-9]*$/;
/** A task subject is one line of at most this many characters. */
export const TASK_SUBJECT_MAX = 200;
/** A task description holds at most this many characters. */
export const TASK_DESCRIPTION_MAX = 16384;
/** A task is blocked by at most this many tasks. */
export const TASK_BLOCKED_BY_MAX = 256;
/** A task lists at most this many write scopes. */
export const TASK_WRITE_SCOPES_MAX = 32;
/** One write scope (a relative path prefix) has at most this many characters. */
export const WRITE_SCOPE_MAX = 512;

/** A message's one-line `summary` (its preview) holds at most this many characters. */
export const MESSAGE_SUMMARY_MAX = 200;

/** `listTasks` pages hold 1 to this many tasks. */
export const TASK_PAGE_MAX = 100;
/** `waitForChange` waits at least this long (ms). */
export const WAIT_TIMEOUT_MIN_MS = 10_000;
/** `waitForChange` waits at most this long (ms). */
export const WAIT_TIMEOUT_MAX_MS = 3_600_000;
/** A `wait_for_team` answer of no progress lists at most this many open tasks (then a count). */
export const WAIT_OPEN_TASKS_MAX = 20;

const HIGH_SURROGATE = /[\uD800-\uDBFF]/;

/**
 * The length of `text` in Unicode code points, as zod counts it for `.min()`/`.max()`: a surrogate
 * pair counts once, a lone surrogate as itself. Counting UTF-16 units instead would refuse in the
 * state an emoji-heavy text the tool schema accepted.
 */
export function textLength(text: string): number {
  // the native regex probe skips the loop for the common text without a high surrogate
  if (!HIGH_SURROGATE.test(text)) return text.length;
  let count = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    if ((text.charCodeAt(i) & 0xfc00) === 0xd800 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      count--;
      i++;
    }
  }
  return count;
}

/**
 * True when `text` has at most `max` code points. Costs O(max), never O(text): a code point is one
 * or two UTF-16 units, so only a text of `max + 1` to `2 * max` units needs counting.
 */
export function isWithinTextLimit(text: string, max: number): boolean {
  if (text.length <= max) return true;
  if (text.length > 2 * max) return false;
  return textLength(text) <= max;
}

/** UTF-8 byte length without allocating an encoded copy. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * UTF-8 bytes of `JSON.stringify(text)` for a string, without building it: the quotes, the
 * escapes JSON writes (`\"`, `\\`, the short control escapes, `\u00XX` for other controls and for
 * lone surrogates) and every other character as UTF-8.
 */
export function jsonStringBytes(text: string): number {
  let bytes = 2;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x20 && code < 0x80) bytes += code === 0x22 || code === 0x5c ? 2 : 1;
    else if (code < 0x20) bytes += isShortEscape(code) ? 2 : 6;
    else if (code < 0x800) bytes += 2;
    else if (code < 0xd800 || code > 0xdfff) bytes += 3;
    else if (code <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 6;
  }
  return bytes;
}

/** `\b`, `\t`, `\n`, `\f`, `\r`: the control characters JSON escapes in two characters. */
function isShortEscape(code: number): boolean {
  return code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d;
}

/**
 * UTF-8 bytes of `JSON.stringify(content) ?? ''`: what `maxMessageBytes` bounds. A list of plain
 * `{ type: 'text', text }` blocks (what mail almost always is) is measured without serialising it;
 * anything else is serialised and measured, so the answer is the same for every value.
 */
export function contentJsonBytes(content: unknown): number {
  if (
    Array.isArray(content) &&
    Object.getPrototypeOf(content) === Array.prototype &&
    !('toJSON' in content)
  ) {
    let bytes = 2 + Math.max(0, content.length - 1);
    for (let i = 0; i < content.length; i++) {
      const block: unknown = content[i];
      if (!isPlainTextBlock(block)) return utf8Length(JSON.stringify(content) ?? '');
      // {"type":"text","text":<text>}
      bytes += 23 + jsonStringBytes(block.text);
    }
    return bytes;
  }
  return utf8Length(JSON.stringify(content) ?? '');
}

/** A plain object with exactly the own enumerable keys `type: 'text'` and a string `text`. */
function isPlainTextBlock(block: unknown): block is { type: 'text'; text: string } {
  if (typeof block !== 'object' || block === null) return false;
  if (Object.getPrototypeOf(block) !== Object.prototype) return false;
  const { type, text } = block as { type?: unknown; text?: unknown };
  if (type !== 'text' || typeof text !== 'string') return false;
  let keys = 0;
  for (const key in block) {
    if (key !== 'type' && key !== 'text') return false;
    keys++;
  }
  return keys === 2;
}

/**
 * A placement capability (what a process can host, what an agent type needs: `repo:<name>`,
 * `credential:anthropic`, `label:gpu`) is at most this many UTF-8 bytes.
 */
export const PLACEMENT_CAPABILITY_MAX_BYTES = 200;
/** A process declares, and an agent type requires, at most this many placement capabilities. */
export const PLACEMENT_CAPABILITIES_MAX = 32;
/**
 * The form of a placement capability: a kind (lower-case letters, digits, `-`), a colon, and a
 * name of printable ASCII without spaces (letters, digits and `._-/@+=:`).
 */
export const PLACEMENT_CAPABILITY_PATTERN = /^[a-z][a-z0-9-]{0,31}:[A-Za-z0-9._\-/@+=:]+$/;
/**
 * Rebalancing (see `placement/rebalance.ts`): a process hands a member to another only when it
 * runs more than this many members more than that process, so two processes whose loads differ
 * by one never trade a member back and forth.
 */
export const REBALANCE_MARGIN = 1;
/** Rebalancing: an uneven placement must be seen in this many consecutive looks before a move. */
export const REBALANCE_HOLD_LOOKS = 3;
/** Rebalancing: a process hands over at most one member per this many looks. */
export const REBALANCE_PERIOD_LOOKS = 6;
/**
 * How long (ms) a process that is being closed waits, by default, for its members' turns to end
 * before it hands them over anyway (their running turns are then aborted and redone elsewhere).
 */
export const HANDOVER_WAIT_MS = 30_000;
/**
 * Live events relayed between the processes of a team (see `LiveChannel`): one batch's wire text
 * is at most this many UTF-8 bytes, so it fits a PostgreSQL `NOTIFY` payload (8000 bytes) with
 * room to spare. A larger batch received from another process is dropped and counted.
 */
export const LIVE_BATCH_BYTES_MAX = 7168;
/** One relayed event (its JSON) is at most this many UTF-8 bytes; a larger one is dropped and counted. */
export const LIVE_EVENT_BYTES_MAX = 4096;
/** A relayed batch holds at most this many events. */
export const LIVE_BATCH_EVENTS_MAX = 64;
/**
 * How long a process gathers live events before it sends them as a batch (ms): consecutive text
 * deltas of one member within it are merged into one event.
 */
export const LIVE_COALESCE_MS = 50;
/** Batches a process sends per second at most; events beyond wait in the queue. */
export const LIVE_BATCHES_PER_SECOND = 40;
/** Live events a process holds waiting to be sent; one more is dropped and counted. */
export const LIVE_QUEUE_MAX = 512;
/** Batches a live channel holds while one is in flight; one more is dropped. */
export const LIVE_SEND_QUEUE_MAX = 8;
/** An agent name in a relayed batch has 1 to this many characters (a member or display name). */
export const LIVE_AGENT_NAME_MAX = 128;
/**
 * A process that proposes records to its team's sequencer (see `TeamSequencer`) waits at most
 * this long (ms) for the answer; then it appends them itself, under the same proposal id, so
 * they are still written at most once.
 */
export const SEQUENCER_ANSWER_TIMEOUT_MS = 2000;
/**
 * One proposal's wire text is at most this many UTF-8 bytes, so it fits a PostgreSQL `NOTIFY`
 * payload (8000 bytes); a larger one is appended directly by its proposer, and one received
 * larger is dropped.
 */
export const SEQUENCER_PROPOSAL_BYTES_MAX = 7168;
/**
 * Proposals of other processes a sequencer holds decided and not yet durable; one more is
 * refused at once (its proposer appends it itself).
 */
export const SEQUENCER_QUEUE_MAX = 256;
/** A sequencer writes at most this many records in one append (its own and proposed ones). */
export const SEQUENCER_BATCH_RECORDS_MAX = 256;
/**
 * Group commit at a sequencer: after an append that carried proposals of other processes, it
 * waits up to this long (ms) for as many proposals to be waiting again before the next append
 * (their proposers are reading the last one back), instead of writing its own records alone.
 */
export const SEQUENCER_GATHER_MS = 10;
/**
 * The lead's turn that failed while it had mail waiting (its host sees the error): it starts no
 * turn on that mail for this long (ms), doubling on each failure in a row up to
 * {@link LEAD_RETRY_MAX_MS}, so a refusal that persists cannot spin it; a host prompt or a turn
 * that ends cleanly goes on at once and starts the waits over.
 */
export const LEAD_RETRY_INITIAL_MS = 1000;
/** The longest wait before the lead retries its mail after failed turns (ms). */
export const LEAD_RETRY_MAX_MS = 60_000;
