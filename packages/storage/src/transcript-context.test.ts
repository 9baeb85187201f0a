import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ChatMessage, CompactionSource, TranscriptEntry } from '@teamwire/core';
import { isCompaction, repairTranscript, transcriptContext } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { nodeFs } from './fs-seam.js';
import { createJsonlTranscriptStore, linesBackward } from './jsonl-transcript-store.js';
import { eachTestInTempDir } from './test-support.js';

const MEMBER = 'm-1';

let dir: string;
eachTestInTempDir((path) => {
  dir = path;
});

/** The real file system, counting the bytes read from transcript files. */
function countingFs() {
  const counts = { bytes: 0 };
  const fs: StorageFs = {
    ...nodeFs,
    async open(path, flags) {
      const handle = await nodeFs.open(path, flags);
      const counted: StorageFileHandle = {
        read: async (buffer, offset, length, position) => {
          const result = await handle.read(buffer, offset, length, position);
          counts.bytes += result.bytesRead;
          return result;
        },
        write: (buffer, offset, length, position) => handle.write(buffer, offset, length, position),
        datasync: () => handle.datasync(),
        sync: () => handle.sync(),
        truncate: (length) => handle.truncate(length),
        stat: () => handle.stat(),
        close: () => handle.close(),
      };
      return counted;
    },
  };
  return { fs, counts };
}

function openStore(fs: StorageFs = nodeFs) {
  return createJsonlTranscriptStore({
    fs,
    dir: join(dir, 'transcripts'),
    durability: 'buffered',
    onClosed: () => undefined,
  });
}

/** A small seeded generator, so every failing case can be replayed. */
function random(seed: number) {
  let x = seed * 2654435761 + 1;
  return (n: number) => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x % n;
  };
}

interface Transcript {
  entries: TranscriptEntry[];
  /** Team messages written to the transcript and never marked delivered (a crash came between). */
  pendingHeld: Set<string>;
}

/**
 * A transcript as the runtime writes it, crashes included: mail (some of it left pending), task
 * prompts, tool calls (some unanswered, some answered twice), orphan results, and `compactions`
 * compactions whose shape follows the context folded so far (head, a replaced range that never
 * splits a call from its result, retained prompts, the recent messages kept), each listing the
 * team messages it replaces and the held ones still pending, as `Conversation.compact` does.
 */
function generate(seed: number, compactions: number, head: number): Transcript {
  const next = random(seed);
  const entries: TranscriptEntry[] = [];
  const pendingHeld = new Set<string>();
  let at = 1;
  let ids = 0;
  const push = (message: ChatMessage) => entries.push({ schemaVersion: 1, at: at++, message });
  const text = (t: string) => [{ type: 'text' as const, text: t }];
  const step = () => {
    const kind = next(10);
    if (kind < 3) {
      const messageId = `msg-${seed}-${ids++}`;
      if (next(4) === 0) pendingHeld.add(messageId);
      push({
        role: 'user',
        content: text(`mail ${messageId}`),
        source: { kind: 'team-message', messageId, senderId: 'lead', senderName: 'lead' },
      });
    } else if (kind < 4) {
      push({
        role: 'user',
        content: text('claim'),
        source: { kind: 'task-claim', taskId: `task-${next(5)}` },
      });
    } else if (kind < 5) {
      push({ role: 'user', content: text(`host ${at}`), source: { kind: 'host' } });
    } else {
      const calls = next(3);
      const toolCalls = Array.from({ length: calls }, (_, i) => ({
        id: `call-${at}-${i}`,
        name: 'look',
        input: { i },
      }));
      push({ role: 'assistant', content: text(`step ${at}`), toolCalls });
      for (const call of toolCalls) {
        const fate = next(8);
        if (fate === 0) continue; // unanswered: a crash cut the call off
        const result: ChatMessage = {
          role: 'tool',
          toolCallId: call.id,
          toolName: call.name,
          content: text(`result ${call.id}`),
        };
        push(result);
        if (fate === 1) push(result); // answered twice: the second is dropped
      }
      if (next(10) === 0) {
        push({ role: 'tool', toolCallId: 'nobody', toolName: 'look', content: text('orphan') });
      }
    }
  };
  const compact = (index: number) => {
    const context = transcriptContext(repairTranscript(entries));
    let h = Math.min(head, context.length);
    while (h < context.length && context[h]?.role === 'tool') h++;
    const ends: number[] = [];
    for (let end = h + 1; end <= context.length; end++) {
      if (context[end]?.role === 'tool') continue;
      if (end === h + 1 && isCompaction(context[h] as ChatMessage)) continue;
      ends.push(end);
    }
    if (ends.length === 0) return;
    const end = ends[next(ends.length)] as number;
    const retained: number[] = [];
    const deliveredIds: string[] = [];
    for (let i = h; i < end; i++) {
      const message = context[i] as ChatMessage;
      const prompt = message.role === 'user' && message.source?.kind === 'task-claim';
      if (prompt && next(2) === 0) retained.push(i - h);
      else if (message.source?.kind === 'team-message') deliveredIds.push(message.source.messageId);
    }
    const kept = new Set<string>();
    for (const message of [...context.slice(0, h), ...context.slice(end)]) {
      if (message.source?.kind === 'team-message') kept.add(message.source.messageId);
    }
    for (const id of pendingHeld) {
      if (!deliveredIds.includes(id) && !kept.has(id)) deliveredIds.push(id);
    }
    const source: CompactionSource = {
      kind: 'compaction',
      compactionId: `c-${seed}-${index}`,
      contextLength: context.length,
      head: h,
      replaced: end - h,
      retained,
      deliveredIds,
      reason: 'budget',
      policy: 'test',
      tokensBefore: 100,
      tokensAfter: 10,
      estimated: true,
      durationMs: 1,
    };
    push({ role: 'user', content: text(`summary ${index}`), source });
  };
  for (let i = 0; i <= compactions; i++) {
    const steps = 3 + next(12);
    for (let s = 0; s < steps; s++) step();
    // a delivery marked in the log: no longer pending
    if (pendingHeld.size > 0 && next(3) === 0) pendingHeld.delete([...pendingHeld][0] as string);
    if (i < compactions) compact(i);
  }
  return { entries, pendingHeld };
}

async function writeTranscript(entries: readonly TranscriptEntry[], tail = ''): Promise<string> {
  const folder = join(dir, 'transcripts');
  await mkdir(folder, { recursive: true });
  const path = join(folder, `${MEMBER}.jsonl`);
  await writeFile(path, entries.map((e) => `${JSON.stringify(e)}\n`).join('') + tail);
  return path;
}

/** The team-message ids a `Conversation` indexes from `entries` (see its `holds`). */
function heldIds(entries: readonly TranscriptEntry[]): Set<string> {
  const held = new Set<string>();
  for (const { message } of entries) {
    const source = message.source;
    if (source?.kind === 'team-message') held.add(source.messageId);
    else if (source?.kind === 'compaction') for (const id of source.deliveredIds) held.add(id);
  }
  return held;
}

describe('loadContext of the JSONL transcript store', () => {
  const cases: { compactions: number; head: number; tail: string }[] = [];
  for (const compactions of [0, 1, 2, 5]) {
    for (const head of [0, 1, 3]) {
      cases.push({ compactions, head, tail: '' });
      cases.push({ compactions, head, tail: '{"schemaVersion":1,"at":99,"mess' });
    }
  }

  it.each(cases)(
    'folds to what load folds to ($compactions compactions, head $head, torn tail: $tail)',
    async ({ compactions, head, tail }) => {
      for (let seed = 1; seed <= 25; seed++) {
        const { entries, pendingHeld } = generate(seed * 31 + compactions, compactions, head);
        await writeTranscript(entries, tail);
        const store = openStore();
        const whole = await store.load({ memberId: MEMBER });
        const context = await store.loadContext({ memberId: MEMBER });
        const label = `seed ${seed}`;
        expect(transcriptContext(context), label).toEqual(transcriptContext(whole));
        expect(whole, label).toEqual(repairTranscript(entries));
        const held = heldIds(context);
        const all = heldIds(whole);
        for (const id of pendingHeld) {
          expect(held.has(id), `${label}: pending ${id}`).toBe(all.has(id));
          expect(all.has(id), `${label}: pending ${id}`).toBe(true);
        }
        expect(store.repairs().length, label).toBe(tail === '' ? 0 : 1);
        await store.close();
      }
    },
  );

  it('gives the context, the last compaction and the entries after it', async () => {
    const { entries } = generate(7, 3, 1);
    await writeTranscript(entries);
    const store = openStore();
    const context = await store.loadContext({ memberId: MEMBER });
    const lastIndex = entries.findLastIndex((e) => isCompaction(e.message));
    const last = entries[lastIndex] as TranscriptEntry;
    const source = (last.message as { source: CompactionSource }).source;
    expect(context[source.contextLength]).toEqual(last);
    expect(context.slice(source.contextLength + 1)).toEqual(
      repairTranscript(entries.slice(lastIndex + 1)),
    );
    await store.close();
  });

  it('does not read the history the last context no longer holds', async () => {
    // Long runs between compactions, each replacing all but the newest messages.
    const entries: TranscriptEntry[] = [];
    let at = 1;
    const user = (text: string): TranscriptEntry => ({
      schemaVersion: 1,
      at: at++,
      message: { role: 'user', content: [{ type: 'text', text }] },
    });
    const padding = 'x'.repeat(2000);
    entries.push(user('brief'));
    let contextLength = 1;
    for (let c = 0; c < 6; c++) {
      for (let i = 0; i < 200; i++) entries.push(user(`${c}/${i} ${padding}`));
      contextLength += 200;
      entries.push({
        schemaVersion: 1,
        at: at++,
        message: {
          role: 'user',
          content: [{ type: 'text', text: `summary ${c}` }],
          source: {
            kind: 'compaction',
            compactionId: `c${c}`,
            contextLength,
            head: 1,
            replaced: contextLength - 3,
            retained: [],
            deliveredIds: [],
            reason: 'budget',
            policy: 'test',
            tokensBefore: 1,
            tokensAfter: 1,
            estimated: true,
            durationMs: 0,
          },
        },
      });
      contextLength = 1 + 1 + 2;
    }
    for (let i = 0; i < 5; i++) entries.push(user(`after ${i}`));
    const path = await writeTranscript(entries);
    const size = (await nodeFs.stat(path)).size;
    const { fs, counts } = countingFs();
    const store = openStore(fs);
    const context = await store.loadContext({ memberId: MEMBER });
    const read = counts.bytes;
    expect(transcriptContext(context)).toEqual(transcriptContext(repairTranscript(entries)));
    // The last run (200 lines), the start, and chunks at the edges: far less than the file.
    expect(size).toBeGreaterThan(2_400_000);
    expect(read).toBeLessThan(size / 3);
    await store.close();

    // A line the context no longer holds is damaged: load reports it, loadContext never reads it.
    const lines = entries.map((e) => JSON.stringify(e));
    lines[300] = '{"damaged": ';
    await writeFile(path, `${lines.join('\n')}\n`);
    const again = openStore();
    await expect(again.load({ memberId: MEMBER })).rejects.toMatchObject({
      code: 'CORRUPT_LOG',
      details: { line: 301 },
    });
    expect(transcriptContext(await again.loadContext({ memberId: MEMBER }))).toEqual(
      transcriptContext(repairTranscript(entries)),
    );
    await again.close();

    // A damaged line the context needs: loadContext reads the file whole and names it too.
    lines[300] = JSON.stringify(entries[300]);
    lines[lines.length - 3] = 'not json';
    await writeFile(path, `${lines.join('\n')}\n`);
    const third = openStore();
    await expect(third.loadContext({ memberId: MEMBER })).rejects.toMatchObject({
      code: 'CORRUPT_LOG',
      details: { line: lines.length - 2 },
    });
    await third.close();
  });

  it('opens a file by reading its end only, and still refuses a damaged last line', async () => {
    const entries = generate(3, 0, 1).entries;
    const many = Array.from({ length: 400 }, (_, i) => ({
      ...(entries[0] as TranscriptEntry),
      at: i,
    }));
    const path = await writeTranscript(many);
    const size = (await nodeFs.stat(path)).size;
    const { fs, counts } = countingFs();
    const store = openStore(fs);
    await store.append({
      memberId: MEMBER,
      entries: [{ ...(entries[0] as TranscriptEntry), at: 1000 }],
    });
    expect(counts.bytes).toBeLessThan(70 * 1024);
    expect(size).toBeGreaterThan(counts.bytes);
    expect((await store.load({ memberId: MEMBER })).map((e) => e.at).at(-1)).toBe(1000);
    await store.close();

    await appendFile(path, 'not json\n');
    const again = openStore();
    await expect(
      again.append({ memberId: MEMBER, entries: [entries[0] as TranscriptEntry] }),
    ).rejects.toMatchObject({ code: 'CORRUPT_LOG', details: { line: 402 } });
    await again.close();
  });

  it('reads lines backwards across chunk edges, long lines and an empty first line', async () => {
    const texts = ['', 'a', 'b'.repeat(50), 'c', 'd'.repeat(7), 'e'];
    const folder = join(dir, 'raw');
    await mkdir(folder, { recursive: true });
    const path = join(folder, 'lines.txt');
    for (const ending of ['\n', '']) {
      const body = texts.join('\n') + ending;
      await writeFile(path, body);
      for (const chunk of [1, 2, 3, 8, 64, 4096]) {
        const handle = await nodeFs.open(path, 'r');
        const seen: { text: string; offset: number; terminated: boolean }[] = [];
        for await (const line of linesBackward(handle, path, 0, Buffer.byteLength(body), chunk)) {
          seen.push({
            text: line.bytes.toString('utf8'),
            offset: line.offset,
            terminated: line.terminated,
          });
        }
        await handle.close();
        const expected: typeof seen = [];
        let offset = 0;
        texts.forEach((text, i) => {
          expected.push({ text, offset, terminated: ending !== '' || i < texts.length - 1 });
          offset += text.length + 1;
        });
        expect(seen.reverse(), `chunk ${chunk}`).toEqual(expected);
      }
    }
  });
});
