import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TranscriptEntry } from './chat.js';
import { copyValidRecord, copyValidUserEntry } from './record-copy.js';
import { parseTeamRecord, TeamRecord } from './records.js';

/*
 * The fast path must give exactly zod's verdict and zod's output: it accepts a value exactly when
 * zod does, and returns what zod returns (same values, same key order, unknown keys stripped,
 * detached from the input where zod's copy is).
 */

/** Strings that sit on the schemas' bounds, in UTF-16 units and in code points. */
const around = (n: number) =>
  fc.constantFrom(
    'x'.repeat(n - 1),
    'x'.repeat(n),
    'x'.repeat(n + 1),
    '😀'.repeat(n),
    '😀'.repeat(n + 1),
    `${'x'.repeat(n - 1)}😀`,
    `${'x'.repeat(n)}\uD800`,
  );
const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom('', '\uD83D', '😀', '__proto__', 'constructor') },
);
const nonEmpty = text.filter((s) => s.length > 0);
const taskId = fc.oneof(
  fc.integer({ min: 1, max: 10_000 }).map((n) => `task-${n}`),
  fc.constantFrom('task-0', 'task-01', 'Task-1', 'task-1 ', ''),
);

const workspace = fc.record(
  {
    path: fc.oneof(nonEmpty, around(4096)),
    branch: fc.oneof(nonEmpty, around(255)),
    base: fc.oneof(nonEmpty, around(64)),
  },
  { requiredKeys: ['path'] },
);
const member = fc.record(
  {
    id: nonEmpty,
    name: fc.oneof(nonEmpty, around(64)),
    description: text,
    agentType: nonEmpty,
    provider: text,
    context: fc.constantFrom('fresh', 'fork'),
    phase: fc.constantFrom('provisioning', 'active', 'failed', 'retired'),
    color: text,
    error: text,
    workspace,
  },
  { requiredKeys: ['id', 'name', 'description', 'agentType', 'provider', 'context', 'phase'] },
);
const task = fc.record(
  {
    id: taskId,
    revision: fc.integer({ min: 1, max: 1000 }),
    subject: fc.oneof(nonEmpty, around(200)),
    description: fc.oneof(nonEmpty, around(16384)),
    status: fc.constantFrom('pending', 'in_progress', 'completed', 'deleted'),
    creatorId: nonEmpty,
    ownerId: nonEmpty,
    blockedBy: fc.array(taskId, { maxLength: 3 }),
    writeScopes: fc.array(nonEmpty, { maxLength: 3 }),
  },
  {
    requiredKeys: [
      'id',
      'revision',
      'subject',
      'description',
      'status',
      'creatorId',
      'blockedBy',
      'writeScopes',
    ],
  },
);
const block = fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  fc.record(
    { type: fc.constant('thinking'), thinking: text, signature: text },
    { requiredKeys: ['type', 'thinking'] },
  ),
  fc.record({ type: fc.constant('redacted_thinking'), data: text }),
  // a block of a type this version does not know, with whatever fields it carries
  fc
    .tuple(
      fc.constantFrom('image', 'tool_reference', 'text ', 'x'),
      fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue(), { maxKeys: 3 }),
    )
    .map(([type, rest]) => ({ ...rest, type })),
);
const message = fc.record(
  {
    id: nonEmpty,
    senderId: nonEmpty,
    senderName: nonEmpty,
    targetId: nonEmpty,
    kind: fc.constantFrom('message', 'idle_notification', 'shutdown_request', 'task_assignment'),
    delivery: fc.constantFrom('quiet', 'wakeup'),
    content: fc.array(block, { maxLength: 3 }),
    summary: text,
    taskId: text,
  },
  {
    requiredKeys: ['id', 'senderId', 'senderName', 'targetId', 'kind', 'delivery', 'content'],
  },
);
const head = {
  seq: fc.integer({ min: 1, max: 2 ** 40 }),
  at: fc.oneof(fc.integer({ min: 0, max: 2 ** 45 }), fc.double({ noNaN: true })),
  teamId: nonEmpty,
  schemaVersion: fc.constant(1),
};
/** Values shaped like records, mostly valid: the interesting cases sit near the valid ones. */
const recordLike = fc.oneof(
  fc.record({ ...head, type: fc.constant('member'), member }),
  fc.record({ ...head, type: fc.constant('task'), task }),
  fc.record({ ...head, type: fc.constant('message.queued'), message }),
  fc.record({
    ...head,
    type: fc.constant('message.delivered'),
    messageId: nonEmpty,
    targetId: nonEmpty,
  }),
);

const BASE = { seq: 7, at: 1_700_000_000_000, teamId: 'T', schemaVersion: 1 };
/** One record of each type with every optional field set, and a block of each kind. */
const TYPICAL = [
  {
    ...BASE,
    type: 'member',
    member: {
      id: 'M',
      name: 'alice',
      description: 'd',
      agentType: 'worker',
      provider: 'scripted',
      context: 'fresh',
      phase: 'failed',
      color: 'blue',
      error: 'boom',
      workspace: { path: '/repo/.worktrees/alice', branch: 'teamwire/alice', base: 'abc123' },
    },
  },
  {
    ...BASE,
    type: 'task',
    task: {
      id: 'task-3',
      revision: 2,
      subject: 's',
      description: 'd',
      status: 'in_progress',
      creatorId: 'T',
      ownerId: 'M',
      blockedBy: ['task-1'],
      writeScopes: ['src'],
    },
  },
  {
    ...BASE,
    type: 'message.queued',
    message: {
      id: 'X',
      senderId: 'T',
      senderName: 'lead',
      targetId: 'M',
      kind: 'task_assignment',
      delivery: 'wakeup',
      content: [
        { type: 'text', text: 'hi' },
        { type: 'thinking', thinking: 'hmm', signature: 'sig' },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'image', source: { data: 'b64' } },
      ],
      summary: 'one line',
      taskId: 'task-3',
    },
  },
  { ...BASE, type: 'message.delivered', messageId: 'X', targetId: 'M' },
];
const DROP = Symbol('drop');
/** Values that sit next to the valid ones: empty, wrong type, out of range, other enum values. */
const PROBES: unknown[] = [
  '',
  'x',
  '😀'.repeat(65),
  'task-0',
  'task-9',
  'pending',
  'retired',
  'fork',
  'quiet',
  'shutdown_request',
  'x'.repeat(256),
  '😀'.repeat(64),
  { path: '/p' },
  { path: '' },
  'text',
  'image',
  0,
  1,
  2,
  -1,
  1.5,
  2 ** 53,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  null,
  undefined,
  [],
  ['task-1'],
  [''],
  {},
];

type Json = Record<string, unknown>;
/** Every object of `v` (itself included), with its path. */
function objectsOf(v: unknown, path: string[] = [], out: [string[], Json][] = []) {
  if (typeof v === 'object' && v !== null) {
    out.push([path, v as Json]);
    for (const [k, child] of Object.entries(v)) objectsOf(child, [...path, k], out);
  }
  return out;
}

/** One edit anywhere in the value: drop a key, replace a value, add a key, or set `undefined`. */
const mutated = fc
  .tuple(
    recordLike,
    fc.nat(),
    fc.nat(),
    fc.constantFrom('drop', 'replace', 'add', 'undefine'),
    fc.oneof(
      fc.anything({ maxDepth: 2 }),
      fc.constantFrom(
        0,
        -1,
        1.5,
        2 ** 53,
        Number.NaN,
        Number.POSITIVE_INFINITY,
        null,
        [],
        {},
        '',
        'x',
      ),
    ),
    fc.string({ maxLength: 6 }),
  )
  .map(([value, where, which, edit, replacement, extraKey]) => {
    const copy = structuredClone(value) as Json;
    const objects = objectsOf(copy);
    const [, target] = objects[where % objects.length] as [string[], Json];
    const keys = Object.keys(target);
    const key = keys[which % Math.max(1, keys.length)];
    if (Array.isArray(target) && (edit === 'add' || key === undefined)) target.push(replacement);
    else if (edit === 'add' || key === undefined) target[extraKey] = replacement;
    else if (edit === 'drop') delete target[key];
    else if (edit === 'undefine') target[key] = undefined;
    else target[key] = replacement;
    return copy;
  });

/** Key order matters too: the log's bytes come from the copy. */
const keyOrder = (v: unknown): unknown =>
  typeof v === 'object' && v !== null
    ? Array.isArray(v)
      ? v.map(keyOrder)
      : Object.entries(v).map(([k, child]) => [k, keyOrder(child)])
    : v;

function agreesWithZod(value: unknown): void {
  const copy = copyValidRecord(value);
  const zod = TeamRecord.safeParse(value);
  expect(copy !== undefined).toBe(zod.success);
  if (copy === undefined) return;
  expect(copy).toStrictEqual(zod.data);
  expect(keyOrder(copy)).toEqual(keyOrder(zod.data));
  // detached as zod's copy is: new objects everywhere but inside blocks of unknown types, whose
  // fields both pass through
  const inputs = new Set(objectsOf(value).map(([, o]) => o));
  const zodShares = new Map(
    objectsOf(zod.data).map(([path, o]) => [path.join('.'), inputs.has(o)]),
  );
  for (const [path, o] of objectsOf(copy)) {
    expect(inputs.has(o), path.join('.')).toBe(zodShares.get(path.join('.')));
  }
}

describe('copyValidRecord, the fast path of record validation', () => {
  it('takes every well-formed record and returns what zod returns', () => {
    fc.assert(
      fc.property(recordLike, (value) => {
        agreesWithZod(value);
      }),
      { numRuns: 2000 },
    );
  });

  it('agrees with zod on records with one edit anywhere', () => {
    fc.assert(
      fc.property(mutated, (value) => {
        agreesWithZod(value);
      }),
      { numRuns: 4000 },
    );
  });

  it('accepts a typical record of each type, and strips keys it does not know', () => {
    for (const record of TYPICAL) {
      expect(copyValidRecord(record)).toStrictEqual(record);
      expect(copyValidRecord({ ...record, extra: true })).toStrictEqual(record);
      agreesWithZod(record);
    }
  });

  it('agrees with zod when any one field of a typical record is removed or replaced', () => {
    let cases = 0;
    for (const record of TYPICAL) {
      for (const [path, object] of objectsOf(record)) {
        for (const key of Object.keys(object)) {
          for (const probe of [DROP, ...PROBES]) {
            const copy = structuredClone(record) as Json;
            const target = path.reduce<Json>((o, k) => o[k] as Json, copy);
            if (probe === DROP) delete target[key];
            else target[key] = probe;
            agreesWithZod(copy);
            cases++;
          }
        }
      }
    }
    expect(cases).toBeGreaterThan(1500);
  });

  it('agrees with zod on optional keys that are inherited, undefined, or on other prototypes', () => {
    // zod reads a key with `in`, so a value on the prototype counts as present; JSON.parse never
    // makes such values, but a command's input can carry them
    const optionalKeys: [number, string[], string, unknown[]][] = [
      [0, ['member'], 'color', ['blue', 5]],
      [0, ['member'], 'error', ['boom', null]],
      [0, ['member'], 'workspace', [{ path: '/p' }, { path: '' }]],
      [0, ['member', 'workspace'], 'branch', ['b', '']],
      [0, ['member', 'workspace'], 'base', ['abc', 'x'.repeat(65)]],
      [1, ['task'], 'ownerId', ['M', '']],
      [2, ['message'], 'summary', ['one line', 7]],
      [2, ['message'], 'taskId', ['task-3', false]],
      [2, ['message', 'content', '1'], 'signature', ['sig', 1]],
    ];
    let cases = 0;
    for (const [index, path, key, values] of optionalKeys) {
      for (const value of [undefined, ...values]) {
        for (const where of ['own', 'inherited'] as const) {
          const copy = structuredClone(TYPICAL[index]) as Json;
          const parent = path.slice(0, -1).reduce<Json>((o, k) => o[k] as Json, copy);
          const last = path.at(-1) as string;
          const target = { ...(parent[last] as Json) };
          delete target[key];
          parent[last] =
            where === 'own'
              ? { ...target, [key]: value }
              : Object.assign(Object.create({ [key]: value }), target);
          agreesWithZod(copy);
          cases++;
        }
      }
    }
    expect(cases).toBeGreaterThan(50);
    // null prototypes, arrays and class instances where objects are expected
    const message = TYPICAL[2] as Json;
    agreesWithZod(Object.assign(Object.create(null), message));
    agreesWithZod({ ...message, message: Object.assign(Object.create(null), message.message) });
    agreesWithZod(Object.assign([], message));
    agreesWithZod({ ...message, message: Object.assign([], message.message) });
    agreesWithZod({ ...message, message: new Map(Object.entries(message.message as Json)) });
  });

  it('agrees with zod on strings around twice a bound in UTF-16 units', () => {
    const task = TYPICAL[1] as Json & { task: Json };
    const member = TYPICAL[0] as Json & { member: Json };
    for (const [n, place] of [
      [200, (s: string) => ({ ...task, task: { ...task.task, subject: s } })],
      [64, (s: string) => ({ ...member, member: { ...member.member, name: s } })],
    ] as const) {
      for (const s of [
        '😀'.repeat(n),
        `${'😀'.repeat(n - 1)}xx`,
        `${'😀'.repeat(n)}x`,
        'x'.repeat(2 * n),
        'x'.repeat(2 * n + 1),
        '\uD800'.repeat(n),
        '\uD800'.repeat(n + 1),
      ]) {
        agreesWithZod(place(s));
      }
    }
  });

  it('leaves refusals, with their codes and messages, to zod', () => {
    const bad = { seq: 1, at: 0, teamId: 'T', schemaVersion: 1, type: 'task', task: {} };
    expect(copyValidRecord(bad)).toBeUndefined();
    expect(() => parseTeamRecord(bad)).toThrow(/invalid team record at seq 1/);
    const newer = { ...bad, schemaVersion: 3 };
    expect(copyValidRecord(newer)).toBeUndefined();
    expect(() => parseTeamRecord(newer)).toThrow(
      expect.objectContaining({ name: 'TeamError', code: 'UNSUPPORTED_SCHEMA_VERSION' }),
    );
  });
});

describe('copyValidUserEntry, the fast path of the transcript entry a delivery writes', () => {
  const source = fc.record({
    kind: fc.constantFrom('team-message', 'team-message', 'task-claim', ''),
    messageId: nonEmpty,
    senderId: fc.oneof(nonEmpty, fc.constant('')),
    senderName: nonEmpty,
  });
  const message = fc.record(
    {
      role: fc.constantFrom('user', 'user', 'assistant'),
      content: fc.array(block, { maxLength: 3 }),
      source,
    },
    { requiredKeys: ['role', 'content'] },
  );
  const entry = fc.record({
    schemaVersion: fc.constantFrom(1, 1, 2),
    at: fc.oneof(fc.integer(), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, 1.5)),
    message,
  });

  /** Whatever the fast path returns, zod returns too; whatever zod refuses, so does it. */
  function agrees(value: unknown): boolean {
    const copy = copyValidUserEntry(value);
    const zod = TranscriptEntry.safeParse(value);
    if (!zod.success) expect(copy).toBeUndefined();
    if (copy === undefined) return false;
    expect(zod.success).toBe(true);
    expect(copy).toStrictEqual(zod.data);
    expect(keyOrder(copy)).toEqual(keyOrder(zod.data));
    return true;
  }

  it('returns what zod returns for the entries it takes, and nothing zod refuses', () => {
    const taken = { withSource: 0, without: 0 };
    fc.assert(
      fc.property(entry, (value) => {
        if (!agrees(value)) return;
        if ('source' in (value.message as object)) taken.withSource++;
        else taken.without++;
      }),
      { numRuns: 4000 },
    );
    // each branch takes about 4% of the generated entries (some 160-240 of 4000, varying a dozen
    // or so between runs): 60 is far below what any run gives, far above none
    expect(taken.withSource).toBeGreaterThan(60);
    expect(taken.without).toBeGreaterThan(60);
  });

  it('agrees with zod when any one field of a delivered message is removed or replaced', () => {
    const typical = {
      schemaVersion: 1,
      at: 1_767_225_600_000,
      message: {
        role: 'user',
        content: [{ type: 'text', text: '<message from="lead">hi</message>' }],
        source: { kind: 'team-message', messageId: 'm-1', senderId: 'lead-id', senderName: 'lead' },
      },
    };
    expect(copyValidUserEntry({ ...typical, extra: 1 })).toStrictEqual(typical);
    for (const [path, object] of objectsOf(typical)) {
      for (const key of Object.keys(object)) {
        for (const probe of [DROP, ...PROBES, undefined]) {
          const copy = structuredClone(typical) as Json;
          const target = path.reduce<Json>((o, k) => o[k] as Json, copy);
          if (probe === DROP) delete target[key];
          else target[key] = probe;
          agrees(copy);
        }
      }
    }
  });
});
