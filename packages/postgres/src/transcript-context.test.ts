import type { ChatMessage, CompactionMessage, TranscriptEntry } from '@teamwire/core';
import { applyCompaction, repairTranscript, TeamState, transcriptContext } from '@teamwire/core';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { SCHEMA_VERSION } from './schema.js';
import type { PostgresTeamStore } from './store.js';
import { describePg, Scratch } from './test-support.js';

const TEAM = '01JTEAMCONTEXT000000000000';
const ALICE = 'alice-id';

/** A small deterministic generator (mulberry32), so a failing seed can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Shape {
  /** Messages kept at the start by every compaction (stretched over tool results). */
  keepFirst: number;
  /** From this compaction on, `keepFirst` is one more (a host that changed its budget). */
  growHeadAt?: number;
  /** Chance that a compaction keeps a prompt it replaces. */
  retain: number;
}

/**
 * A transcript as a member's runtime writes it, appended in batches: prompts, team mail,
 * assistant turns with tool calls (some never answered, as a crash leaves them, and a few
 * results without a call), and compactions made against the context the transcript folds to
 * at that point, as the runtime makes them.
 */
async function write(
  store: PostgresTeamStore,
  memberId: string,
  seed: number,
  steps: number,
  compactions: number,
  shape: Shape,
): Promise<TranscriptEntry[]> {
  const next = random(seed);
  const all: TranscriptEntry[] = [];
  let batch: TranscriptEntry[] = [];
  let at = 1000;
  let made = 0;
  const entry = (message: ChatMessage): TranscriptEntry => ({
    schemaVersion: 1,
    at: at++,
    message,
  });
  const flush = async () => {
    if (batch.length === 0) return;
    await store.transcripts.append({ memberId, entries: batch });
    all.push(...batch);
    batch = [];
  };
  const text = (value: string) => [{ type: 'text' as const, text: value }];
  for (let step = 0; step < steps; step++) {
    const roll = next();
    if (roll < 0.2) {
      batch.push(entry({ role: 'user', content: text(`prompt ${step}`) }));
    } else if (roll < 0.35) {
      batch.push(
        entry({
          role: 'user',
          content: text(`mail ${step}`),
          source: {
            kind: 'team-message',
            messageId: `${memberId}-msg-${step}`,
            senderId: 'lead-id',
            senderName: 'lead',
          },
        }),
      );
    } else if (roll < 0.7) {
      const calls = Array.from({ length: 1 + Math.floor(next() * 2) }, (_, i) => ({
        id: `call-${step}-${i}`,
        name: 'work',
        input: { step },
      }));
      batch.push(entry({ role: 'assistant', content: text(`calling ${step}`), toolCalls: calls }));
      for (const call of calls) {
        // now and then a result is missing (the process died) or belongs to no call
        if (next() < 0.1) continue;
        batch.push(
          entry({
            role: 'tool',
            toolCallId: next() < 0.05 ? `orphan-${step}` : call.id,
            toolName: 'work',
            content: text(`result ${step}`),
          }),
        );
      }
    } else {
      batch.push(entry({ role: 'assistant', content: text(`answer ${step}`), toolCalls: [] }));
    }
    if (next() < 0.3) await flush();
    if (made < compactions && step > 0 && step % Math.floor(steps / (compactions + 1)) === 0) {
      await flush();
      const summary = compaction(all, made, shape, next);
      if (summary !== undefined) {
        batch.push(entry(summary));
        made++;
        await flush();
      }
    }
  }
  await flush();
  expect(made).toBe(compactions);
  return all;
}

/** A compaction of the context `entries` fold to (once repaired, as a restarted runtime has it). */
function compaction(
  entries: readonly TranscriptEntry[],
  index: number,
  shape: Shape,
  next: () => number,
): CompactionMessage | undefined {
  const context = transcriptContext(repairTranscript([...entries]));
  let head = Math.min(
    shape.keepFirst + (shape.growHeadAt !== undefined && index >= shape.growHeadAt ? 1 : 0),
    context.length,
  );
  while (head < context.length && context[head]?.role === 'tool') head++;
  // keep a recent part of random length, never starting at a tool result
  let end = context.length - Math.floor(next() * Math.min(8, context.length - head));
  while (end < context.length && context[end]?.role === 'tool') end++;
  if (end - head < 1) return undefined;
  const retained: number[] = [];
  for (let i = head; i < end; i++) {
    const message = context[i] as ChatMessage;
    if (message.role === 'user' && message.source?.kind !== 'compaction' && next() < shape.retain) {
      retained.push(i - head);
    }
  }
  const summary: CompactionMessage = {
    role: 'user',
    content: [{ type: 'text', text: `summary ${index}` }],
    source: {
      kind: 'compaction',
      compactionId: `compaction-${index}`,
      contextLength: context.length,
      head,
      replaced: end - head,
      retained,
      deliveredIds: [],
      reason: 'budget',
      policy: 'test',
      tokensBefore: 100,
      tokensAfter: 10,
      estimated: true,
      durationMs: 0,
    },
  };
  applyCompaction(context, summary);
  return summary;
}

describePg('PostgreSQL transcript context (loadContext)', () => {
  let scratch: Scratch;
  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  const contextOf = async (store: PostgresTeamStore, memberId: string) => ({
    whole: transcriptContext(await store.transcripts.load({ memberId })),
    loaded: await store.transcripts.loadContext!({ memberId }),
  });

  it('gives what load gives for a transcript without compactions', async () => {
    const store = await scratch.open(TEAM);
    await write(store, ALICE, 7, 60, 0, { keepFirst: 2, retain: 0 });
    expect(await store.transcripts.loadContext!({ memberId: ALICE })).toEqual(
      await store.transcripts.load({ memberId: ALICE }),
    );
    expect(await store.transcripts.loadContext!({ memberId: 'nobody' })).toEqual([]);
  });

  it.each([
    [1, { keepFirst: 2, retain: 0.3 }],
    [2, { keepFirst: 0, retain: 0.5 }],
    [3, { keepFirst: 3, retain: 0 }],
    [4, { keepFirst: 1, retain: 1 }],
    [5, { keepFirst: 2, retain: 0.3, growHeadAt: 2 }],
    [6, { keepFirst: 4, retain: 0.2 }],
  ] as [number, Shape][])(
    'folds to what load folds to, with several compactions (seed %i)',
    async (seed, shape) => {
      const store = await scratch.open(TEAM);
      const members = ['alice-id', 'bob-id'];
      for (const [i, memberId] of members.entries()) {
        await write(store, memberId, seed * 10 + i, 160, 1 + ((seed + i) % 4) + 2, shape);
      }
      for (const memberId of members) {
        const { whole, loaded } = await contextOf(store, memberId);
        expect(transcriptContext(loaded)).toEqual(whole);
        // the context is read without the history before it (a summary kept in a grown head is
        // the exception: that transcript is loaded whole)
        const full = await store.transcripts.load({ memberId });
        if (shape.growHeadAt === undefined) expect(loaded.length).toBeLessThan(full.length * 0.7);
        // every team message of the context is among the entries given, with its source
        const ids = (messages: readonly ChatMessage[]) =>
          messages.flatMap((m) => (m.source?.kind === 'team-message' ? [m.source.messageId] : []));
        expect(ids(loaded.map((e) => e.message))).toEqual(expect.arrayContaining(ids(whole)));
      }
    },
  );

  it('reads none of the history the compactions replaced', async () => {
    const store = await scratch.open(TEAM);
    const entries = await write(store, ALICE, 42, 200, 4, { keepFirst: 2, retain: 0 });
    const whole = transcriptContext(await store.transcripts.load({ memberId: ALICE }));
    // Corrupt every row between the first and the second compaction, and those of the first run
    // past the head and a first page: none of them is in the context the last compaction applied
    // to (no prompt retained, recent parts are short, the head is two messages).
    const idxs = entries.flatMap((entry, i) =>
      entry.message.source?.kind === 'compaction' ? [i + 1] : [],
    );
    const corrupted = await scratch.sql(
      `UPDATE "${scratch.schema}".transcript SET entry = '[]'
        WHERE member_id = $1 AND ((idx > $2 AND idx < $3) OR (idx > 32 AND idx < $2))`,
      [ALICE, idxs[0], idxs[1]],
    );
    expect(idxs[0]).toBeGreaterThan(40);
    expect(corrupted.rowCount).toBeGreaterThan(40);
    await expect(store.transcripts.load({ memberId: ALICE })).rejects.toMatchObject({
      code: 'CORRUPT_LOG',
    });
    const loaded = await store.transcripts.loadContext!({ memberId: ALICE });
    expect(transcriptContext(loaded)).toEqual(whole);
    expect(loaded.length).toBeLessThan(entries.length / 2);
  });

  it('fills the compaction column of a version-1 store when migrating, and keeps the log', async () => {
    const first = await scratch.open(TEAM);
    await write(first, ALICE, 11, 120, 3, { keepFirst: 2, retain: 0.3 });
    const records = TeamState.fromRecords([], { teamId: TEAM });
    const lead = records.createLead({ id: 'lead-id', agentType: 'lead', provider: 'scripted' });
    await first.log.append({ records: lead });
    const whole = transcriptContext(await first.transcripts.load({ memberId: ALICE }));
    await first.close();
    // Back to what version 1 created: no snapshots table, no compaction column (nor what later
    // versions added).
    const s = `"${scratch.schema}"`;
    await scratch.sql(`DROP TABLE ${s}.team_snapshots`);
    await scratch.sql(`ALTER TABLE ${s}.transcript DROP COLUMN compaction`);
    await scratch.sql(
      `ALTER TABLE ${s}.processes DROP COLUMN activity, DROP COLUMN reported_at, DROP COLUMN reported_through, DROP COLUMN capabilities`,
    );
    await scratch.sql(`DELETE FROM ${s}.schema_version WHERE version >= 2`);
    // a v1 row whose text looks like a compaction but is not JSON stays unparsed
    await scratch.sql(
      `INSERT INTO ${s}.transcript (team_id, member_id, idx, entry, batch_id)
       VALUES ($1, 'carol-id', 1, '{"kind":"compaction"', gen_random_uuid())`,
      [TEAM],
    );

    const again = await scratch.open(TEAM);
    expect(again.migrated).toEqual({ from: 1, to: SCHEMA_VERSION });
    const filled = await scratch.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${s}.transcript WHERE compaction IS NOT NULL`,
    );
    expect(filled.rows[0]!.n).toBe(3);
    const loaded = await again.transcripts.loadContext!({ memberId: ALICE });
    expect(transcriptContext(loaded)).toEqual(whole);
    expect(again.log.lastSeq()).toBe(lead.length);
    await again.log.snapshots!.write(records.snapshot());
    const stored = [];
    for await (const snapshot of again.log.snapshots!.list()) stored.push(snapshot.seq);
    expect(stored).toEqual([lead.length]);
    await expect(again.transcripts.loadContext!({ memberId: 'carol-id' })).rejects.toMatchObject({
      code: 'CORRUPT_LOG',
    });
  });
});
