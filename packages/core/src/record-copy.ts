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
  SCHEMA_VERSION,
  TASK_STATUSES,
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
 * points, integers that are safe, numbers that are finite); a property test holds the two to the
 * same verdict and the same output, so a schema change that is not made here fails that test.
 *
 * Dependencies run one way: `records.ts` uses this module; this module never imports
 * `records.ts`. Both take their value sets from `record-values.ts`, and `records.ts` gives the
 * untyped copy its schema type.
 */
type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const str = (v: unknown): v is string => typeof v === 'string';
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

/** zod measures string bounds in code points; a string within `max` UTF-16 units is within it. */
function withinCodePoints(s: string, max: number): boolean {
  if (s.length <= max) return true;
  let n = 0;
  for (const _ of s) if (++n > max) return false;
  return true;
}
const bounded = (v: unknown, max: number): v is string =>
  typeof v === 'string' && v.length > 0 && withinCodePoints(v, max);
const safeIntAtLeast1 = (v: unknown): v is number =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const has = (v: Obj, key: string) => Object.hasOwn(v, key);
const oneOf =
  <T extends string>(values: readonly T[]) =>
  (v: unknown): v is T =>
    typeof v === 'string' && (values as readonly string[]).includes(v);

const memberPhase = oneOf(MEMBER_PHASES);
const memberContext = oneOf(MEMBER_CONTEXTS);
const taskStatus = oneOf(TASK_STATUSES);
const messageKind = oneOf(MESSAGE_KINDS);
const messageDelivery = oneOf(MESSAGE_DELIVERIES);

/** An optional key passes when absent, or present (even as `undefined`, which zod keeps). */
function optional(v: Obj, key: string, ok: (x: unknown) => boolean): boolean {
  return !has(v, key) || v[key] === undefined || ok(v[key]);
}
function copyOptional(from: Obj, to: Obj, key: string): void {
  if (has(from, key)) to[key] = from[key];
}

const workspaceBranch = (v: unknown) => bounded(v, WORKSPACE_BRANCH_MAX);
const workspaceBase = (v: unknown) => bounded(v, WORKSPACE_BASE_MAX);

function copyWorkspace(v: unknown): Obj | undefined {
  if (
    !isObj(v) ||
    !bounded(v.path, WORKSPACE_PATH_MAX) ||
    !optional(v, 'branch', workspaceBranch) ||
    !optional(v, 'base', workspaceBase)
  ) {
    return undefined;
  }
  const out: Obj = { path: v.path };
  copyOptional(v, out, 'branch');
  copyOptional(v, out, 'base');
  return out;
}

function copyMember(v: unknown): Obj | undefined {
  if (!isObj(v)) return undefined;
  if (
    !nonEmpty(v.id) ||
    !bounded(v.name, MEMBER_NAME_MAX) ||
    !str(v.description) ||
    !nonEmpty(v.agentType) ||
    !str(v.provider) ||
    !memberContext(v.context) ||
    !memberPhase(v.phase) ||
    !optional(v, 'color', str) ||
    !optional(v, 'error', str)
  ) {
    return undefined;
  }
  const out: Obj = {
    id: v.id,
    name: v.name,
    description: v.description,
    agentType: v.agentType,
    provider: v.provider,
    context: v.context,
    phase: v.phase,
  };
  copyOptional(v, out, 'color');
  copyOptional(v, out, 'error');
  if (has(v, 'workspace')) {
    if (v.workspace === undefined) out.workspace = undefined;
    else {
      const workspace = copyWorkspace(v.workspace);
      if (workspace === undefined) return undefined;
      out.workspace = workspace;
    }
  }
  return out;
}

const taskId = (v: unknown): v is string => typeof v === 'string' && TASK_ID_PATTERN.test(v);

function copyStrings(v: unknown, ok: (x: unknown) => boolean): string[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: string[] = new Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const item = v[i];
    if (!ok(item)) return undefined;
    out[i] = item as string;
  }
  return out;
}

function copyTask(v: unknown): Obj | undefined {
  if (!isObj(v)) return undefined;
  if (
    !taskId(v.id) ||
    !safeIntAtLeast1(v.revision) ||
    !bounded(v.subject, TASK_SUBJECT_MAX) ||
    !bounded(v.description, TASK_DESCRIPTION_MAX) ||
    !taskStatus(v.status) ||
    !nonEmpty(v.creatorId) ||
    !optional(v, 'ownerId', nonEmpty)
  ) {
    return undefined;
  }
  const blockedBy = copyStrings(v.blockedBy, taskId);
  const writeScopes = copyStrings(v.writeScopes, nonEmpty);
  if (!blockedBy || !writeScopes) return undefined;
  const out: Obj = {
    id: v.id,
    revision: v.revision,
    subject: v.subject,
    description: v.description,
    status: v.status,
    creatorId: v.creatorId,
  };
  copyOptional(v, out, 'ownerId');
  out.blockedBy = blockedBy;
  out.writeScopes = writeScopes;
  return out;
}

function copyBlock(v: unknown): ContentBlock | undefined {
  if (!isObj(v)) return undefined;
  switch (v.type) {
    case 'text':
      return str(v.text) ? { type: 'text', text: v.text } : undefined;
    case 'thinking': {
      if (!str(v.thinking) || !optional(v, 'signature', str)) {
        return undefined;
      }
      const out: Obj = { type: 'thinking', thinking: v.thinking };
      copyOptional(v, out, 'signature');
      return out as ContentBlock;
    }
    case 'redacted_thinking':
      return str(v.data) ? { type: 'redacted_thinking', data: v.data } : undefined;
    default:
      // a block of a type this version does not know is kept whole (zod's loose object)
      return nonEmpty(v.type) ? ({ type: v.type, ...v } as ContentBlock) : undefined;
  }
}

function copyMessage(v: unknown): Obj | undefined {
  if (!isObj(v)) return undefined;
  if (
    !nonEmpty(v.id) ||
    !nonEmpty(v.senderId) ||
    !nonEmpty(v.senderName) ||
    !nonEmpty(v.targetId) ||
    !messageKind(v.kind) ||
    !messageDelivery(v.delivery) ||
    !Array.isArray(v.content) ||
    !optional(v, 'summary', str) ||
    !optional(v, 'taskId', str)
  ) {
    return undefined;
  }
  const content: ContentBlock[] = new Array(v.content.length);
  for (let i = 0; i < v.content.length; i++) {
    const block = copyBlock(v.content[i]);
    if (!block) return undefined;
    content[i] = block;
  }
  const out: Obj = {
    id: v.id,
    senderId: v.senderId,
    senderName: v.senderName,
    targetId: v.targetId,
    kind: v.kind,
    delivery: v.delivery,
    content,
  };
  copyOptional(v, out, 'summary');
  copyOptional(v, out, 'taskId');
  return out;
}

/**
 * What zod's `TeamRecord` schema returns for `value`, or `undefined` where it refuses it. The copy
 * is untyped here; `records.ts` types it.
 */
export function copyValidRecord(value: unknown): Record<string, unknown> | undefined {
  if (
    !isObj(value) ||
    !safeIntAtLeast1(value.seq) ||
    !finite(value.at) ||
    !nonEmpty(value.teamId) ||
    value.schemaVersion !== SCHEMA_VERSION
  ) {
    return undefined;
  }
  // object literals, not spreads: V8 builds these shapes several times faster
  const { seq, at, teamId } = value;
  switch (value.type) {
    case 'member': {
      const member = copyMember(value.member);
      return member && { seq, at, teamId, schemaVersion: SCHEMA_VERSION, type: 'member', member };
    }
    case 'task': {
      const task = copyTask(value.task);
      return task && { seq, at, teamId, schemaVersion: SCHEMA_VERSION, type: 'task', task };
    }
    case 'message.queued': {
      const message = copyMessage(value.message);
      return (
        message && {
          seq,
          at,
          teamId,
          schemaVersion: SCHEMA_VERSION,
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
            schemaVersion: SCHEMA_VERSION,
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
