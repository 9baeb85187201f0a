import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { runExample, startExample, waitForLine } from './run-example.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teamwire-example-resume-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: records are checked field by field below
type Line = any;
const lines = async (file: string): Promise<Line[]> =>
  (await readFile(file, 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));

it('jsonl-resume.ts: SIGKILLed mid-task, run again, finishes with every message delivered once', async () => {
  const first = startExample('jsonl-resume.ts', [dir]);
  await waitForLine(first, /mid task-2: kill me/);
  first.child.kill('SIGKILL');
  expect((await first.done).signal).toBe('SIGKILL');
  const atKill = await readFile(join(dir, 'log.jsonl'), 'utf8');
  const tasksAtKill = new Map<string, string>();
  for (const r of await lines(join(dir, 'log.jsonl'))) {
    if (r.type === 'task') tasksAtKill.set(r.task.id, r.task.status);
  }
  expect(Object.fromEntries(tasksAtKill)).toEqual({
    'task-1': 'completed',
    'task-2': 'in_progress',
    'task-3': 'pending',
  });

  const second = await runExample('jsonl-resume.ts', [dir]);
  expect(second.stderr).toBe('');
  expect(second.code).toBe(0);
  expect(second.stdout).toMatch(/^resuming: \d+ records$/m);
  expect(second.stdout).toContain('task-1: completed\ntask-2: completed\ntask-3: completed\n');

  // nothing lost: the log the kill left is the start of the final log
  const log = await readFile(join(dir, 'log.jsonl'), 'utf8');
  expect(log.startsWith(atKill)).toBe(true);
  expect(log.length).toBeGreaterThan(atKill.length);
  // none twice: each queued message delivered once, into its target's transcript once
  const records = await lines(join(dir, 'log.jsonl'));
  const targets = new Map<string, string>();
  for (const r of records)
    if (r.type === 'message.queued') targets.set(r.message.id, r.message.targetId);
  const delivered = records.filter((r) => r.type === 'message.delivered').map((r) => r.messageId);
  expect([...delivered].sort()).toEqual([...targets.keys()].sort());
  const inTranscripts: string[] = [];
  for (const file of await readdir(join(dir, 'transcripts'))) {
    const memberId = file.replace(/\.jsonl$/, '');
    for (const entry of await lines(join(dir, 'transcripts', file))) {
      const source = entry.message.source;
      if (source?.kind !== 'team-message') continue;
      expect(targets.get(source.messageId)).toBe(memberId);
      inTranscripts.push(source.messageId);
    }
  }
  expect([...inTranscripts].sort()).toEqual([...targets.keys()].sort());
  expect(second.stdout).toContain(
    `mail: ${targets.size} queued, ${targets.size} delivered, 0 twice`,
  );
});
