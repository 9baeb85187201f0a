import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compiledTranscriptEntry, parseTranscriptEntry, TranscriptEntry } from './chat.js';
import {
  checkRecordInput,
  compiledTeamRecord,
  parseAppendedRecord,
  parseTeamRecord,
  readTeamRecord,
  SCHEMA_VERSION,
  TeamRecord,
  TRANSCRIPT_SCHEMA_VERSION,
} from './records.js';
import { catchTeamError, createTestTeam } from './state/test-fixtures.js';

/*
 * The fast path of validation is compiled from the schemas themselves (`compiledSchema`): nothing
 * describes a record twice. These tests hold the compiled checkers to the schemas they come from
 * on the values records are made of: the generated code takes a value exactly when the schema
 * accepts it, and returns what the schema returns (same values, same key order, unknown keys
 * stripped, detached from the input where the schema's copy is); a refusal is explained by the
 * schema, with the codes and messages it always had.
 */

/** Where zod marks a parse its generated code handed to the schema's runtime parser. */
const FALLBACK = Symbol.for('zod.compile.fallback');

/**
 * Whether the compiled `schema` answered `value` from its generated code (true) or handed it to
 * the runtime parser (false). It reads zod's mark on the parse context; since every refusal must
 * be handed over (see `agreesWithZod`), a zod that stopped marking fails these tests instead of
 * passing them unread.
 */
function takenFast(schema: z.ZodType, value: unknown): boolean {
  const ctx = { async: false } as Record<PropertyKey, unknown>;
  schema._zod.run({ value, issues: [] }, ctx as never);
  return ctx[FALLBACK] !== true;
}

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
/** The record header, with the schema version of the record type most of the time. */
const head = (version: number) => ({
  seq: fc.integer({ min: 1, max: 2 ** 40 }),
  at: fc.oneof(fc.integer({ min: 0, max: 2 ** 45 }), fc.double({ noNaN: true })),
  teamId: nonEmpty,
  schemaVersion: fc.oneof(
    { weight: 8, arbitrary: fc.constant(version) },
    { weight: 1, arbitrary: fc.constantFrom(1, 2, 3) },
  ),
});
/** Values shaped like records, mostly valid: the interesting cases sit near the valid ones. */
const recordLike = fc.oneof(
  fc.record({ ...head(1), type: fc.constant('member'), member }),
  fc.record({ ...head(1), type: fc.constant('task'), task }),
  fc.record({ ...head(1), type: fc.constant('message.queued'), message }),
  fc.record({
    ...head(1),
    type: fc.constant('message.delivered'),
    messageId: nonEmpty,
    targetId: nonEmpty,
  }),
  fc.record(
    {
      ...head(2),
      type: fc.constant('message.dead_lettered'),
      messageId: nonEmpty,
      targetId: nonEmpty,
      reason: fc.constantFrom('TARGET_FAILED', 'TARGET_RETIRED', 'EXCEEDS_CONTEXT', 'LOST'),
      detail: fc.oneof(nonEmpty, around(1024)),
    },
    {
      requiredKeys: [
        'seq',
        'at',
        'teamId',
        'schemaVersion',
        'type',
        'messageId',
        'targetId',
        'reason',
      ],
    },
  ),
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
  {
    ...BASE,
    schemaVersion: 2,
    type: 'message.dead_lettered',
    messageId: 'X',
    targetId: 'M',
    reason: 'TARGET_RETIRED',
    detail: 'retired before it read its mail',
  },
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
  'TARGET_FAILED',
  'x'.repeat(1025),
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
function mutationsOf(values: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc
    .tuple(
      values,
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
}
const mutated = mutationsOf(recordLike);

/** Key order matters too: the log's bytes come from the copy. */
const keyOrder = (v: unknown): unknown =>
  typeof v === 'object' && v !== null
    ? Array.isArray(v)
      ? v.map(keyOrder)
      : Object.entries(v).map(([k, child]) => [k, keyOrder(child)])
    : v;

/**
 * The compiled record schema agrees with the schema on `value`: its generated code takes it
 * exactly when the schema accepts it and returns what the schema returns; `parseTeamRecord`
 * returns that too, or refuses with the code and message the schema's error always gave.
 */
function agreesWithZod(value: unknown): void {
  const compiled = compiledTeamRecord();
  const zod = TeamRecord.safeParse(value);
  readAgreesWithZod(value);
  expect(takenFast(compiled, value)).toBe(zod.success);
  const fast = compiled.safeParse(value);
  expect(fast.success).toBe(zod.success);
  if (!zod.success) {
    expectRefusal(
      () => parseTeamRecord(value),
      value,
      SCHEMA_VERSION,
      'invalid team record',
      zod.error,
    );
    return;
  }
  const copy = fast.data;
  expect(copy).toStrictEqual(zod.data);
  expect(keyOrder(copy)).toEqual(keyOrder(zod.data));
  expect(parseTeamRecord(value)).toStrictEqual(zod.data);
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

/**
 * `readTeamRecord` of the value as JSON text gives it (what a log hands it) agrees with the schema
 * on that value: the same refusal, or the same record, and that record is the value itself exactly
 * when the schema dropped nothing from it.
 */
function readAgreesWithZod(value: unknown): void {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return; // no JSON text holds it
  }
  if (text === undefined) return;
  const owned: unknown = JSON.parse(text);
  const zod = TeamRecord.safeParse(owned);
  if (!zod.success) {
    const again: unknown = JSON.parse(text);
    expectRefusal(
      () => readTeamRecord(again),
      again,
      SCHEMA_VERSION,
      'invalid team record',
      zod.error,
    );
    return;
  }
  const dropped = !isDeepStrictEqual(owned, zod.data);
  const read = readTeamRecord(owned);
  expect(read).toStrictEqual(zod.data);
  expect(read === owned).toBe(!dropped);
}

/**
 * `parse` refuses `value` as it always did: a missing or bad schema version with `INVALID_RECORD`,
 * a newer one with `UNSUPPORTED_SCHEMA_VERSION`, anything else with the schema's own error.
 */
function expectRefusal(
  parse: () => unknown,
  value: unknown,
  newest: number,
  what: string,
  error: z.ZodError,
): void {
  const refusal = catchTeamError(parse);
  const version = (value as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    expect(refusal.code).toBe('INVALID_RECORD');
    expect(refusal.message).toMatch(/has no valid schemaVersion/);
  } else if (version > newest) {
    expect(refusal.code).toBe('UNSUPPORTED_SCHEMA_VERSION');
  } else {
    const seq = (value as { seq?: unknown }).seq;
    const at = what === 'invalid team record' && typeof seq === 'number' ? ` at seq ${seq}` : '';
    expect(refusal.code).toBe('INVALID_RECORD');
    expect(refusal.message).toBe(`${what}${at}: ${z.prettifyError(error)}`);
  }
}

describe('the compiled record schema, the fast path of record validation', () => {
  it('is compiled, not the schema itself', () => {
    expect(compiledTeamRecord()).not.toBe(TeamRecord);
    expect(compiledTranscriptEntry()).not.toBe(TranscriptEntry);
  });

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

  it('refuses a schemaVersion that is an object, even one that cannot become a string', () => {
    for (const schemaVersion of [{ toString: 0 }, Object.create(null), [1], () => 1]) {
      const value = { ...(TYPICAL[0] as Json), schemaVersion };
      for (const read of [parseTeamRecord, readTeamRecord]) {
        const refusal = catchTeamError(() => read(value));
        expect(refusal.code).toBe('INVALID_RECORD');
        expect(refusal.message).toMatch(
          /has no valid schemaVersion \(got an? (object|array|function)\)/,
        );
      }
    }
  });

  it('accepts a typical record of each type, and strips keys it does not know', () => {
    for (const record of TYPICAL) {
      expect(parseTeamRecord(record)).toStrictEqual(record);
      expect(parseTeamRecord({ ...record, extra: true })).toStrictEqual(record);
      const owned = structuredClone(record);
      expect(readTeamRecord(owned)).toBe(owned);
      expect(readTeamRecord({ ...record, extra: true })).toStrictEqual(record);
      expect(takenFast(compiledTeamRecord(), { ...record, extra: true })).toBe(true);
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
    expect(takenFast(compiledTeamRecord(), bad)).toBe(false);
    expect(() => parseTeamRecord(bad)).toThrow(/invalid team record at seq 1/);
    const newer = { ...bad, schemaVersion: SCHEMA_VERSION + 1 };
    expect(takenFast(compiledTeamRecord(), newer)).toBe(false);
    expect(() => parseTeamRecord(newer)).toThrow(
      expect.objectContaining({ name: 'TeamError', code: 'UNSUPPORTED_SCHEMA_VERSION' }),
    );
  });
});

describe('the compiled transcript entry schema', () => {
  const count = fc.oneof(
    { weight: 20, arbitrary: fc.nat({ max: 200_000 }) },
    { weight: 1, arbitrary: fc.constantFrom(-1, 1.5, Number.NaN, 2 ** 53) },
  );
  const compaction = fc.record({
    kind: fc.constant('compaction'),
    compactionId: nonEmpty,
    contextLength: count,
    head: count,
    replaced: count,
    retained: fc.array(count, { maxLength: 3 }),
    deliveredIds: fc.array(nonEmpty, { maxLength: 3 }),
    reason: fc.constantFrom('budget', 'overflow', 'budget', 'overflow', 'other'),
    policy: fc.oneof(nonEmpty, around(200)),
    tokensBefore: count,
    tokensAfter: count,
    estimated: fc.constantFrom(true, false, true, false, 0),
    durationMs: fc.oneof(
      { weight: 6, arbitrary: fc.double({ min: 0, max: 1e6, noNaN: true }) },
      { weight: 1, arbitrary: fc.constant(-1) },
    ),
  });
  const source = fc.oneof(
    fc.record({
      kind: fc.constantFrom('team-message', 'team-message', 'team-message', ''),
      messageId: nonEmpty,
      senderId: fc.oneof(
        { weight: 6, arbitrary: nonEmpty },
        { weight: 1, arbitrary: fc.constant('') },
      ),
      senderName: nonEmpty,
    }),
    fc.record({ kind: fc.constant('task-claim'), taskId: text }),
    fc.record({ kind: fc.constant('host') }),
    // twice as often: it has the most fields, so it is valid the least often
    compaction,
    compaction,
  );
  const usage = fc.record(
    {
      inputTokens: count,
      outputTokens: count,
      cacheReadTokens: count,
      cacheWriteTokens: count,
      reasoningTokens: count,
    },
    { requiredKeys: ['inputTokens', 'outputTokens'] },
  );
  const toolCall = fc.record(
    {
      id: nonEmpty,
      name: fc.oneof({ weight: 6, arbitrary: nonEmpty }, { weight: 1, arbitrary: fc.constant('') }),
      input: fc.jsonValue(),
    },
    { requiredKeys: ['id', 'name'] },
  );
  const content = fc.array(block, { maxLength: 3 });
  const message = fc.oneof(
    fc.record(
      { role: fc.constant('user'), content, source },
      { requiredKeys: ['role', 'content'] },
    ),
    fc.record(
      {
        role: fc.constant('assistant'),
        content,
        toolCalls: fc.array(toolCall, { maxLength: 2 }),
        usage,
        stopReason: fc.constantFrom(
          'end_turn',
          'tool_calls',
          'max_tokens',
          'aborted',
          'other',
          'x',
        ),
        source,
      },
      { requiredKeys: ['role', 'content', 'toolCalls'] },
    ),
    fc.record(
      {
        role: fc.constant('tool'),
        toolCallId: nonEmpty,
        toolName: nonEmpty,
        content,
        isError: fc.oneof(fc.boolean(), fc.constant('true')),
        source,
      },
      { requiredKeys: ['role', 'toolCallId', 'toolName', 'content'] },
    ),
  );
  const entry = fc.record({
    schemaVersion: fc.constantFrom(1, 1, 1, 2),
    at: fc.oneof(fc.integer(), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, 1.5)),
    message,
  });

  /** As `agreesWithZod`, for transcript entries and `parseTranscriptEntry`. */
  function agrees(value: unknown): boolean {
    const compiled = compiledTranscriptEntry();
    const zod = TranscriptEntry.safeParse(value);
    expect(takenFast(compiled, value)).toBe(zod.success);
    const fast = compiled.safeParse(value);
    expect(fast.success).toBe(zod.success);
    if (!zod.success) {
      expectRefusal(
        () => parseTranscriptEntry(value),
        value,
        TRANSCRIPT_SCHEMA_VERSION,
        'invalid transcript entry',
        zod.error,
      );
      return false;
    }
    expect(fast.data).toStrictEqual(zod.data);
    expect(keyOrder(fast.data)).toEqual(keyOrder(zod.data));
    expect(parseTranscriptEntry(value)).toStrictEqual(zod.data);
    const inputs = new Set(objectsOf(value).map(([, o]) => o));
    const zodShares = new Map(
      objectsOf(zod.data).map(([path, o]) => [path.join('.'), inputs.has(o)]),
    );
    for (const [path, o] of objectsOf(fast.data)) {
      expect(inputs.has(o), path.join('.')).toBe(zodShares.get(path.join('.')));
    }
    return true;
  }

  it('takes every entry the schema accepts, returns what it returns, and refuses the rest', () => {
    const taken: Record<string, number> = {};
    fc.assert(
      fc.property(entry, (value) => {
        if (!agrees(value)) return;
        const { role, source } = value.message as { role: string; source?: { kind: string } };
        const key = `${role}/${source?.kind ?? 'none'}`;
        taken[key] = (taken[key] ?? 0) + 1;
      }),
      { numRuns: 4000 },
    );
    // every role with every source is generated valid and taken: the rarest combinations come
    // out valid some 20-40 times in 4000 entries, so 5 is far below any run and far above none
    for (const role of ['user', 'assistant', 'tool']) {
      for (const kind of ['none', 'team-message', 'task-claim', 'host', 'compaction']) {
        expect(taken[`${role}/${kind}`] ?? 0, `${role}/${kind}`).toBeGreaterThan(5);
      }
    }
  });

  it('agrees with the schema on entries with one edit anywhere', () => {
    fc.assert(
      fc.property(mutationsOf(entry), (value) => {
        agrees(value);
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees with the schema when any one field of a typical entry is removed or replaced', () => {
    const typical = [
      {
        schemaVersion: 1,
        at: 1_767_225_600_000,
        message: {
          role: 'user',
          content: [{ type: 'text', text: '<message from="lead">hi</message>' }],
          source: {
            kind: 'team-message',
            messageId: 'm-1',
            senderId: 'lead-id',
            senderName: 'lead',
          },
        },
      },
      {
        schemaVersion: 1,
        at: 1_767_225_600_001,
        message: {
          role: 'assistant',
          content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }],
          toolCalls: [{ id: 'call_1', name: 'read_file', input: { path: 'a.ts' } }],
          usage: { inputTokens: 812, outputTokens: 31, cacheReadTokens: 700 },
          stopReason: 'tool_calls',
        },
      },
      {
        schemaVersion: 1,
        at: 1_767_225_600_002,
        message: {
          role: 'tool',
          toolCallId: 'call_1',
          toolName: 'read_file',
          content: [{ type: 'text', text: '...' }],
          isError: false,
        },
      },
      {
        schemaVersion: 1,
        at: 1_767_225_600_003,
        message: {
          role: 'user',
          content: [{ type: 'text', text: 'Summary' }],
          source: {
            kind: 'compaction',
            compactionId: 'c-1',
            contextLength: 52,
            head: 1,
            replaced: 40,
            retained: [3],
            deliveredIds: ['m-1'],
            reason: 'budget',
            policy: 'model',
            tokensBefore: 96012,
            tokensAfter: 31877,
            estimated: false,
            durationMs: 8120.5,
          },
        },
      },
    ];
    let cases = 0;
    for (const value of typical) {
      expect(parseTranscriptEntry({ ...value, extra: 1 })).toStrictEqual(value);
      expect(takenFast(compiledTranscriptEntry(), { ...value, extra: 1 })).toBe(true);
      for (const [path, object] of objectsOf(value)) {
        for (const key of Object.keys(object)) {
          for (const probe of [DROP, ...PROBES, undefined]) {
            const copy = structuredClone(value) as Json;
            const target = path.reduce<Json>((o, k) => o[k] as Json, copy);
            if (probe === DROP) delete target[key];
            else target[key] = probe;
            agrees(copy);
            cases++;
          }
        }
      }
    }
    expect(cases).toBeGreaterThan(2000);
  });
});

describe('parseAppendedRecord, what a log runs on each appended record', () => {
  /** Every record type, as `TeamState` commands build them. */
  function builtRecords(): TeamRecord[] {
    const team = createTestTeam();
    const alice = team.spawn('alice');
    team.task('ship it');
    for (const id of ['m-1', 'm-2']) {
      team.run((s) =>
        s.queueMessage({
          id,
          senderId: team.leadId,
          targetId: alice,
          kind: 'message',
          delivery: 'wakeup',
          content: [{ type: 'text', text: 'hi' }],
          summary: 'greeting',
        }),
      );
    }
    team.run((s) => s.markDelivered({ messageId: 'm-1' }));
    team.run((s) => s.deadLetter({ messageId: 'm-2', reason: 'TARGET_RETIRED', detail: 'gone' }));
    return team.log;
  }

  it('takes a record the team state built as it is, without another copy', () => {
    const records = builtRecords();
    expect(new Set(records.map((r) => r.type))).toEqual(
      new Set(['member', 'task', 'message.queued', 'message.delivered', 'message.dead_lettered']),
    );
    for (const record of records) expect(parseAppendedRecord(record)).toBe(record);
    const checked = checkRecordInput(structuredClone(records[0]) as TeamRecord);
    expect(parseAppendedRecord(checked)).toBe(checked);
  });

  it('validates and copies anything else, copies of built records included', () => {
    for (const record of builtRecords()) {
      for (const copy of [
        JSON.parse(JSON.stringify(record)),
        structuredClone(record),
        { ...record },
      ]) {
        const parsed = parseAppendedRecord(copy);
        expect(parsed).not.toBe(copy);
        expect(parsed).toStrictEqual(record);
        const broken = { ...copy, teamId: '' };
        expect(catchTeamError(() => parseAppendedRecord(broken)).code).toBe('INVALID_RECORD');
        const newer = { ...copy, schemaVersion: SCHEMA_VERSION + 1 };
        expect(catchTeamError(() => parseAppendedRecord(newer)).code).toBe(
          'UNSUPPORTED_SCHEMA_VERSION',
        );
      }
    }
    for (const value of [null, undefined, 7, 'record', [], {}]) {
      expect(catchTeamError(() => parseAppendedRecord(value)).code).toBe('INVALID_RECORD');
    }
  });
});
