import { type ChildProcess, fork } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ChatMessage,
  isCompaction,
  type TranscriptEntry,
  transcriptContext,
} from '@teamwire/core';
import { afterAll, describe, expect, it } from 'vitest';
import { readTeamState, readTranscript } from './inspect.js';

// SIGKILL of a member's process while its context is being compacted and right after, then a
// resume: the resumed member must go on from exactly the context the transcript holds (the
// compacted one once the compaction entry is durable, the old one before), without summarising
// again, and every acknowledged mail must be in its transcript exactly once.

const CHILD = join(dirname(fileURLToPath(import.meta.url)), '..', 'crash', 'compaction-child.mjs');
const WINDOW = 4000;
const ROUNDS = 16;

const root = mkdtempSync(join(tmpdir(), 'teamwire-compaction-kill-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface ChildMessage {
  type: string;
  messages?: ChatMessage[];
  first?: ChatMessage[];
  summaries?: number;
}

function start(
  mode: 'run' | 'resume',
  window: number,
): { child: ChildProcess; output: () => string } {
  const child = fork(
    CHILD,
    [
      '--dir',
      join(root, 'team'),
      '--acks',
      join(root, 'acks'),
      '--mode',
      mode,
      '--window',
      String(window),
    ],
    { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  return { child, output: () => output };
}

/** Bob's transcript as the store will load it: its file with the transcript journal's appends. */
async function bobEntries(): Promise<TranscriptEntry[]> {
  const dir = join(root, 'team');
  if (!existsSync(join(dir, 'log.jsonl'))) return [];
  const { state } = await readTeamState(dir, { teamId: 'compaction-team' });
  const bob = state.memberByName('bob');
  return bob === undefined ? [] : readTranscript(dir, bob.id);
}

const compactionsIn = (entries: readonly TranscriptEntry[]) =>
  entries.filter((entry) => isCompaction(entry.message)).length;

const teamIds = (entries: readonly TranscriptEntry[]) =>
  entries.flatMap((e) =>
    e.message.source?.kind === 'team-message' ? [e.message.source.messageId] : [],
  );

/**
 * Runs bob until the kill point, SIGKILLs him there, and returns the last request he sent after a
 * durable compaction (for `after`), if any.
 */
function runUntilKill(when: 'during' | 'after', delayMs: number) {
  return new Promise<{ afterCompaction: ChatMessage[] | undefined }>((resolve, reject) => {
    const { child, output } = start('run', WINDOW);
    let compacted = false;
    let afterCompaction: ChatMessage[] | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no compaction within 60 s:\n${output()}`));
    }, 60_000);
    const kill = () => {
      clearTimeout(timer);
      child.kill('SIGKILL');
    };
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'compacting' && when === 'during') setTimeout(kill, delayMs);
      if (message.type === 'compacted') {
        compacted = true;
        if (when === 'after' && delayMs === 0) kill();
      }
      // The first request after the compaction: the context bob had in memory, as he sent it.
      if (
        message.type === 'request' &&
        compacted &&
        when === 'after' &&
        afterCompaction === undefined
      ) {
        afterCompaction = message.messages;
        if (delayMs > 0) kill();
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL') resolve({ afterCompaction });
      else reject(new Error(`the run child exited ${code}:\n${output()}`));
    });
  });
}

function resume() {
  return new Promise<{ first: ChatMessage[]; summaries: number }>((resolve, reject) => {
    // A larger window: the first request after the resume must not compact on its own.
    const { child, output } = start('resume', WINDOW * 10);
    let result: { first: ChatMessage[]; summaries: number } | undefined;
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'resumed') {
        result = { first: message.first ?? [], summaries: message.summaries ?? -1 };
      }
    });
    child.on('exit', (code) => {
      if (code === 0 && result !== undefined) resolve(result);
      else reject(new Error(`the resume child exited ${code}:\n${output()}`));
    });
  });
}

describe('SIGKILL during and after a compaction', () => {
  it('resumes from exactly the stored context, never summarising again, with every mail once', async () => {
    const outcomes = { inFlight: 0, durable: 0, matchedMemory: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const when = round % 2 === 0 ? 'during' : 'after';
      const delayMs = when === 'during' ? (round * 7) % 30 : round % 4 === 1 ? 0 : 1;
      const before = compactionsIn(await bobEntries());
      const { afterCompaction } = await runUntilKill(when, delayMs);
      const entries = await bobEntries();
      const written = compactionsIn(entries) - before;
      if (when === 'during' && written === 0) outcomes.inFlight++;
      if (written > 0) outcomes.durable++;

      const expected = transcriptContext(entries);
      const resumed = await resume();
      expect(resumed.summaries, `round ${round}: the resume summarised again`).toBe(0);
      expect(resumed.first.slice(0, expected.length), `round ${round}`).toEqual(expected);
      // After the stored context come newly delivered messages, none seen before, the resume's
      // mail among them; before it, bob's own answer may finish a turn the kill cut (it starts
      // at once when the resume's mail is not durable yet).
      const held = new Set(teamIds(entries));
      const added = resumed.first.slice(expected.length);
      const mail = added.filter((message) => message.source?.kind === 'team-message');
      expect(mail.length, `round ${round}: no new mail after the stored context`).toBeGreaterThan(
        0,
      );
      for (const message of added) {
        if (message.source?.kind === 'team-message') {
          expect(held.has(message.source.messageId)).toBe(false);
        } else {
          expect(
            message.source,
            `round ${round}: only bob's own answer is not mail`,
          ).toBeUndefined();
          expect(['assistant', 'tool']).toContain(message.role);
        }
      }
      if (afterCompaction !== undefined) {
        // What bob had in memory after compacting is what the resume rebuilt.
        expect(expected.slice(0, afterCompaction.length)).toEqual(afterCompaction);
        outcomes.matchedMemory++;
      }
    }
    expect(
      outcomes.inFlight,
      'kills that landed before the compaction was durable',
    ).toBeGreaterThan(0);
    expect(outcomes.durable, 'kills after a durable compaction').toBeGreaterThan(0);
    expect(outcomes.matchedMemory).toBeGreaterThan(0);

    // Exactly once: every acknowledged send is in bob's transcript once (the spawn prompt too).
    const acked = existsSync(join(root, 'acks'))
      ? readFileSync(join(root, 'acks'), 'utf8')
          .split('\n')
          .filter((line) => line !== '')
      : [];
    const ids = teamIds(await bobEntries());
    expect(acked.length).toBeGreaterThan(ROUNDS * 3);
    for (const id of acked)
      expect(
        ids.filter((x) => x === id),
        id,
      ).toHaveLength(1);
    expect(new Set(ids).size).toBe(ids.length);
    expect(compactionsIn(await bobEntries())).toBeGreaterThanOrEqual(ROUNDS / 2);
  }, 240_000);
});
