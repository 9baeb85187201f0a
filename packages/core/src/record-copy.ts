import type { ContentBlock } from './content.js';
import {
  MEMBER_NAME_MAX,
  TASK_DESCRIPTION_MAX,
  TASK_ID_PATTERN,
  TASK_SUBJECT_MAX,
} from './limits.js';
import {
  MEMBER_CONTEXTS,
  MEMBER_PHASES,
  MESSAGE_DELIVERIES,
  MESSAGE_KINDS,
  RECORD_SCHEMA_VERSIONS,
  TASK_STATUSES,
  TRANSCRIPT_SCHEMA_VERSION,
  WORKSPACE_BASE_MAX,
  WORKSPACE_BRANCH_MAX,
  WORKSPACE_PATH_MAX,
} from './record-values.js';

/**
 * The fast path of record validation. `copyValidRecord` returns exactly what the zod schema of
 * `TeamRecord` returns for a value it accepts (new objects, keys in schema order, unknown
 * keys stripped, blocks of unknown types kept whole) and `undefined` for a value it refuses; the
 * caller then asks zod, for its error message. Every record the runtime writes and every line it
 * reads back goes through here, so recovery and appends pay a few property checks per record
 * instead of a schema walk (about a third of zod's cost, measured on real logs).
 *
 * It mirrors the schemas in `records.ts` and `content.ts` rule for rule (string lengths in code
 * points, integers that are safe, numbers that are finite, optional keys read with `in` as zod
 * reads them); a property test holds the two to the same verdict and the same output, so a schema
 * change that is not made here fails that test.
 *
 * Recovery runs it once per line, so it is written to cost little next to `JSON.parse`: every
 * key is read once, the enum lists become `Set`s once at load, no closure is made per record, and
 * each object of the copy is built by one literal of its final shape (one per combination of the
 * common optional keys) rather than grown key by key, which also gives the fold objects of few
 * shapes.
 *
 * Dependencies run one way: `records.ts` uses this module; this module never imports
 * `records.ts`. Both take their value sets from `record-values.ts`, and `records.ts` gives the
 * untyped copy its schema type.
 */
type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * zod measures string bounds in code points: a string of at most `max` UTF-16 units is within the
 * bound, one of more than `2 * max` units is not, and only the strings between are counted.
 */
function withinCodePoints(s: string, max: number): boolean {
  if (s.length <= max) return true;
  if (s.length > 2 * max) return false;
  let n = 0;
  for (const _ of s) if (++n > max) return false;
  return true;
}

function bounded(v: unknown, max: number): v is string {
  return typeof v === 'string' && v.length > 0 && (v.length <= max || withinCodePoints(v, max));
}

function nonEmpty(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0;
}

function safeIntAtLeast1(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}

function isTaskId(v: unknown): v is string {
  return typeof v === 'string' && TASK_ID_PATTERN.test(v);
}

/** A membership test against one of the value lists of `record-values.ts`. */
function valueSet(values: readonly string[]): (v: unknown) => boolean {
  const set = new Set(values);
  return (v) => typeof v === 'string' && set.has(v);
}
const isMemberPhase = valueSet(MEMBER_PHASES);
const isMemberContext = valueSet(MEMBER_CONTEXTS);
const isTaskStatus = valueSet(TASK_STATUSES);
const isMessageKind = valueSet(MESSAGE_KINDS);
const isMessageDelivery = valueSet(MESSAGE_DELIVERIES);

const ABSENT = 0;
const PRESENT = 1;
const INVALID = 2;
/**
 * An optional string key, as zod reads it (`key in v`, so an inherited value counts): absent,
 * present (a string, or `undefined` that zod keeps), or invalid.
 */
function optionalString(v: Obj, key: string): number {
  const x = v[key];
  if (x === undefined) return key in v ? PRESENT : ABSENT;
  return typeof x === 'string' ? PRESENT : INVALID;
}

function copyWorkspace(v: unknown): Obj | undefined {
  if (!isObj(v) || !bounded(v.path, WORKSPACE_PATH_MAX)) return undefined;
  const out: Obj = { path: v.path };
  for (const [key, max] of [
    ['branch', WORKSPACE_BRANCH_MAX],
    ['base', WORKSPACE_BASE_MAX],
  ] as const) {
    const x = v[key];
    if (x === undefined && !(key in v)) continue;
    if (x !== undefined && !bounded(x, max)) return undefined;
    out[key] = x;
  }
  return out;
}

/** The fast path of one part of a record (see the module comment); `undefined` where zod must decide. */
export function copyMember(v: unknown): Obj | undefined {
  if (!isObj(v)) return undefined;
  const { id, name, description, agentType, provider, context, phase } = v;
  if (
    !nonEmpty(id) ||
    !bounded(name, MEMBER_NAME_MAX) ||
    typeof description !== 'string' ||
    !nonEmpty(agentType) ||
    typeof provider !== 'string' ||
    !isMemberContext(context) ||
    !isMemberPhase(phase)
  ) {
    return undefined;
  }
  const color = optionalString(v, 'color');
  const error = optionalString(v, 'error');
  if (color === INVALID || error === INVALID) return undefined;
  const out: Obj =
    color === PRESENT
      ? { id, name, description, agentType, provider, context, phase, color: v.color }
      : { id, name, description, agentType, provider, context, phase };
  if (error === PRESENT) out.error = v.error;
  const workspace = v.workspace;
  if (workspace !== undefined) {
    const copy = copyWorkspace(workspace);
    if (copy === undefined) return undefined;
    out.workspace = copy;
  } else if ('workspace' in v) {
    out.workspace = undefined;
  }
  return out;
}

function copyTaskIds(v: unknown): string[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: string[] = new Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const item = v[i];
    if (!isTaskId(item)) return undefined;
    out[i] = item;
  }
  return out;
}

function copyNonEmpty(v: unknown): string[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: string[] = new Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const item = v[i];
    if (!nonEmpty(item)) return undefined;
    out[i] = item;
  }
  return out;
}

/** The fast path of one part of a record (see the module comment); `undefined` where zod must decide. */
export function copyTask(v: unknown): Obj | undefined {
  if (!isObj(v)) return undefined;
  const { id, revision, subject, description, status, creatorId } = v;
  if (
    !isTaskId(id) ||
    !safeIntAtLeast1(revision) ||
    !bounded(subject, TASK_SUBJECT_MAX) ||
    !bounded(description, TASK_DESCRIPTION_MAX) ||
    !isTaskStatus(status) ||
    !nonEmpty(creatorId)
  ) {
    return undefined;
  }
  const ownerId = v.ownerId;
  const owner = ownerId === undefined ? ('ownerId' in v ? PRESENT : ABSENT) : PRESENT;
  if (ownerId !== undefined && !nonEmpty(ownerId)) return undefined;
  const blockedBy = copyTaskIds(v.blockedBy);
  if (blockedBy === undefined) return undefined;
  const writeScopes = copyNonEmpty(v.writeScopes);
  if (writeScopes === undefined) return undefined;
  return owner === PRESENT
    ? { id, revision, subject, description, status, creatorId, ownerId, blockedBy, writeScopes }
    : { id, revision, subject, description, status, creatorId, blockedBy, writeScopes };
}

function copyBlock(v: unknown): ContentBlock | undefined {
  if (!isObj(v)) return undefined;
  const type = v.type;
  if (type === 'text') {
    const text = v.text;
    return typeof text === 'string' ? { type: 'text', text } : undefined;
  }
  if (type === 'thinking') {
    const thinking = v.thinking;
    if (typeof thinking !== 'string') return undefined;
    const signature = optionalString(v, 'signature');
    if (signature === INVALID) return undefined;
    return signature === PRESENT
      ? { type: 'thinking', thinking, signature: v.signature as string }
      : { type: 'thinking', thinking };
  }
  if (type === 'redacted_thinking') {
    const data = v.data;
    return typeof data === 'string' ? { type: 'redacted_thinking', data } : undefined;
  }
  // a block of a type this version does not know is kept whole (zod's loose object)
  return nonEmpty(type) ? ({ type, ...v } as ContentBlock) : undefined;
}

function copyContent(v: unknown[]): ContentBlock[] | undefined {
  const out: ContentBlock[] = new Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const block = copyBlock(v[i]);
    if (block === undefined) return undefined;
    out[i] = block;
  }
  return out;
}

/** The fast path of one part of a record (see the module comment); `undefined` where zod must decide. */
export function copyMessage(v: unknown): Obj | undefined {
  if (!isObj(v)) return undefined;
  const { id, senderId, senderName, targetId, kind, delivery } = v;
  if (
    !nonEmpty(id) ||
    !nonEmpty(senderId) ||
    !nonEmpty(senderName) ||
    !nonEmpty(targetId) ||
    !isMessageKind(kind) ||
    !isMessageDelivery(delivery) ||
    !Array.isArray(v.content)
  ) {
    return undefined;
  }
  const summary = optionalString(v, 'summary');
  const taskId = optionalString(v, 'taskId');
  if (summary === INVALID || taskId === INVALID) return undefined;
  const content = copyContent(v.content);
  if (content === undefined) return undefined;
  if (taskId === PRESENT) {
    return summary === PRESENT
      ? {
          id,
          senderId,
          senderName,
          targetId,
          kind,
          delivery,
          content,
          summary: v.summary,
          taskId: v.taskId,
        }
      : { id, senderId, senderName, targetId, kind, delivery, content, taskId: v.taskId };
  }
  return summary === PRESENT
    ? { id, senderId, senderName, targetId, kind, delivery, content, summary: v.summary }
    : { id, senderId, senderName, targetId, kind, delivery, content };
}

/**
 * The version every record type the fast path copies is written with; the newer
 * `message.dead_lettered` (rare) is left to zod.
 */
const V1 = RECORD_SCHEMA_VERSIONS.member;

export function copyValidRecord(value: unknown): Record<string, unknown> | undefined {
  if (!isObj(value)) return undefined;
  const { seq, at, teamId, schemaVersion, type } = value;
  if (
    !safeIntAtLeast1(seq) ||
    typeof at !== 'number' ||
    !Number.isFinite(at) ||
    !nonEmpty(teamId) ||
    schemaVersion !== V1
  ) {
    return undefined;
  }
  switch (type) {
    case 'member': {
      const member = copyMember(value.member);
      return member && { seq, at, teamId, schemaVersion: V1, type: 'member', member };
    }
    case 'task': {
      const task = copyTask(value.task);
      return task && { seq, at, teamId, schemaVersion: V1, type: 'task', task };
    }
    case 'message.queued': {
      const message = copyMessage(value.message);
      return (
        message && {
          seq,
          at,
          teamId,
          schemaVersion: V1,
          type: 'message.queued',
          message,
        }
      );
    }
    case 'message.delivered': {
      const { messageId, targetId } = value;
      return nonEmpty(messageId) && nonEmpty(targetId)
        ? {
            seq,
            at,
            teamId,
            schemaVersion: V1,
            type: 'message.delivered',
            messageId,
            targetId,
          }
        : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * The fast path of a transcript entry, for the entry every delivery writes: a `user` message with
 * its content and, optionally, a `team-message` source. Returns what the `TranscriptEntry` schema
 * of `chat.ts` returns for it, and `undefined` for every other entry (assistant messages, tool
 * results, other sources) and every value it refuses: zod decides those. A table test holds the
 * two to the same output.
 */
export function copyValidUserEntry(value: unknown): Record<string, unknown> | undefined {
  if (!isObj(value)) return undefined;
  const { schemaVersion, at, message } = value;
  if (
    schemaVersion !== TRANSCRIPT_SCHEMA_VERSION ||
    typeof at !== 'number' ||
    !Number.isFinite(at) ||
    !isObj(message) ||
    message.role !== 'user' ||
    !Array.isArray(message.content)
  ) {
    return undefined;
  }
  const content = copyContent(message.content);
  if (content === undefined) return undefined;
  if (!('source' in message)) {
    return { schemaVersion: TRANSCRIPT_SCHEMA_VERSION, at, message: { role: 'user', content } };
  }
  const source = message.source;
  if (!isObj(source) || source.kind !== 'team-message') return undefined;
  const { messageId, senderId, senderName } = source;
  if (!nonEmpty(messageId) || !nonEmpty(senderId) || !nonEmpty(senderName)) return undefined;
  return {
    schemaVersion: TRANSCRIPT_SCHEMA_VERSION,
    at,
    message: {
      role: 'user',
      content,
      source: { kind: 'team-message', messageId, senderId, senderName },
    },
  };
}
