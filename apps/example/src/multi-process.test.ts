import { readFileSync } from 'node:fs';
import path from 'node:path';
import { foldTeam, parseTeamRecord, parseTranscriptEntry, type TeamRecord } from '@teamwire/core';
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminPool, describePg, dropSchema, freshSchema, PG_URL } from './pg-test-support.js';
import {
  type CliRun,
  FIXTURE_EXPECTED,
  makeFixtureRepo,
  parseReportTable,
  runCli,
  tempDir,
} from './test-support.js';

const EXTRA_UNITS = 2;
const EXPECTED = {
  ...FIXTURE_EXPECTED,
  ...Object.fromEntries(
    Array.from({ length: EXTRA_UNITS }, (_, i) => [
      `extra${i + 1}`,
      { files: 4, lines: 8, todo: 4, exports: 4 },
    ]),
  ),
};

/**
 * Which reviewer claims which folder depends on timing (reviewers claim ready tasks by themselves,
 * racing each other, and across processes on when each process hears of a change), so it may
 * differ from run to run: the reviewer's name is the only thing normalised. Every number, note,
 * path and the order of the folders must be the same.
 */
function normalised(report: string): string {
  return report.replace(/\breviewer-\d+\b/g, 'reviewer-N');
}

function byUnit(report: string) {
  return Object.fromEntries(
    parseReportTable(report).map((r) => [
      r.unit,
      { files: r.files, lines: r.lines, todo: r.todo, exports: r.exports },
    ]),
  );
}

/** The worker processes a run started, from its `started worker n (pid p, process id)` lines. */
function startedWorkers(stdout: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of stdout.matchAll(/started worker (\d+) \(pid \d+, process (\S+)\)/g)) {
    out.set(m[2] as string, Number(m[1]));
  }
  return out;
}

function teamIdOf(stdout: string): string {
  const id = /— team (\S+)/.exec(stdout)?.[1];
  expect(id).toMatch(/^[0-9A-Z]{26}$/);
  return id as string;
}

interface TeamRows {
  records: TeamRecord[];
  /** Per log record: the member it was written for (none for system writes) and the process. */
  writers: { seq: number; actorId: string | null; processId: string | null }[];
  transcript: {
    memberId: string;
    idx: number;
    entry: string;
    messageId: string | null;
    messagePart: number | null;
    processId: string | null;
  }[];
}

async function teamRows(pool: pg.Pool, schema: string, teamId: string): Promise<TeamRows> {
  const log = await pool.query<{
    seq: string;
    record: string;
    actor_id: string | null;
    process_id: string | null;
  }>(
    `SELECT seq::text, record, actor_id, process_id FROM "${schema}".team_log
      WHERE team_id = $1 ORDER BY team_log.seq`,
    [teamId],
  );
  const transcript = await pool.query<{
    member_id: string;
    idx: string;
    entry: string;
    message_id: string | null;
    message_part: number | null;
    process_id: string | null;
  }>(
    `SELECT member_id, idx::text, entry, message_id, message_part, process_id
       FROM "${schema}".transcript WHERE team_id = $1 ORDER BY member_id, transcript.idx`,
    [teamId],
  );
  return {
    records: log.rows.map((r) => parseTeamRecord(JSON.parse(r.record))),
    writers: log.rows.map((r) => ({
      seq: Number(r.seq),
      actorId: r.actor_id,
      processId: r.process_id,
    })),
    transcript: transcript.rows.map((r) => ({
      memberId: r.member_id,
      idx: Number(r.idx),
      entry: r.entry,
      messageId: r.message_id,
      messagePart: r.message_part,
      processId: r.process_id,
    })),
  };
}

/**
 * What every run kept in PostgreSQL must show in the database: the log folds, every task is
 * completed, every reviewer retired, every queued (acknowledged) message was delivered exactly
 * once, into its target's transcript, once; the lead ran in the main process only, and every
 * reviewer's writes (log records and transcript entries: its turns) came from worker processes.
 */
function checkTeam(rows: TeamRows, teamId: string, workers: Map<string, number>) {
  const { records } = rows;
  expect(records.map((r) => r.seq)).toEqual(records.map((_, i) => i + 1));
  const team = foldTeam(records, { teamId });
  expect(team.tasks.map((t) => t.status)).toEqual(
    Array(Object.keys(EXPECTED).length + 1).fill('completed'),
  );
  const reviewers = team.roster.filter((m) => m.id !== teamId);
  expect(reviewers.map((m) => m.phase)).toEqual(['retired', 'retired', 'retired']);
  expect(team.pendingMail).toEqual([]);
  // The lead's waits see reviewers working in other processes: wait_for_team does not answer
  // noProgress while they work (it did on every wait when status came from local runners).
  const idle = rows.transcript.filter(
    (row) => row.memberId === teamId && row.entry.includes('noProgress'),
  );
  expect(idle.length).toBeLessThanOrEqual(1);

  const queued = records.filter(
    (r): r is Extract<TeamRecord, { type: 'message.queued' }> => r.type === 'message.queued',
  );
  const deliveries = new Map<string, number>();
  for (const r of records) {
    if (r.type !== 'message.delivered') continue;
    deliveries.set(r.messageId, (deliveries.get(r.messageId) ?? 0) + 1);
  }
  // a failure names the messages that ended otherwise (dead letters carry why)
  const ended = team.deadLetters.map((d) => ({
    kind: d.message.kind,
    from: d.message.senderName,
    to: d.message.targetId,
    reason: d.reason,
    detail: d.detail,
  }));
  expect(
    new Map(queued.map((q) => [q.message.id, deliveries.get(q.message.id)])),
    JSON.stringify(ended),
  ).toEqual(new Map(queued.map((q) => [q.message.id, 1])));
  expect([...deliveries.keys()].sort()).toEqual(queued.map((q) => q.message.id).sort());

  // into the target's transcript, once (each part of it once)
  const seen = new Map<string, string>();
  const parts = new Set<string>();
  for (const row of rows.transcript) {
    const source = parseTranscriptEntry(JSON.parse(row.entry)).message.source;
    if (source?.kind !== 'team-message') continue;
    const part = `${row.memberId}/${source.messageId}/${row.messagePart}`;
    expect(parts.has(part), `message part ${part} twice`).toBe(false);
    parts.add(part);
    expect(seen.get(source.messageId) ?? row.memberId).toBe(row.memberId);
    seen.set(source.messageId, row.memberId);
  }
  expect(seen).toEqual(new Map(queued.map((q) => [q.message.id, q.message.targetId])));

  // where each member ran: the lead in one process that is no worker, reviewers in workers only
  const leadProcesses = new Set(
    rows.writers.filter((w) => w.actorId === teamId).map((w) => w.processId),
  );
  expect(leadProcesses.size).toBe(1);
  expect(workers.has([...leadProcesses][0] as string)).toBe(false);
  for (const reviewer of reviewers) {
    const logWriters = rows.writers.filter((w) => w.actorId === reviewer.id);
    const entries = rows.transcript.filter((t) => t.memberId === reviewer.id);
    expect(entries.length, `${reviewer.name} has a transcript`).toBeGreaterThan(0);
    for (const w of [...logWriters, ...entries]) {
      expect(workers.has(w.processId as string), `${reviewer.name} written by ${w.processId}`).toBe(
        true,
      );
    }
  }
  return { team, reviewers };
}

/** In the main output, reviewer turns show up only as lines of a worker. */
function checkOutput(run: CliRun) {
  expect(run.stderr).toBe('');
  expect(run.code, run.stdout).toBe(0);
  const turnLines = run.stdout.split('\n').filter((l) => / reviewer-\d+ turn on /.test(l));
  expect(turnLines.length).toBeGreaterThan(0);
  for (const line of turnLines) expect(line).toMatch(/^\[worker \d\] /);
  // the main process ran no reviewer tool (its board shows the tool calls of its own members)
  expect(run.stdout).not.toMatch(/^\S+ reviewer-\d+ (list_files|search_text|read_file)\(/m);
}

describePg('a review spread over processes in PostgreSQL', () => {
  // a schema for each run: (b) and (c) run at once, and two processes creating one new schema at
  // the same moment can fail in @teamwire/postgres's migration (duplicate pg_namespace key)
  const b = freshSchema();
  const c = freshSchema();
  let admin: pg.Pool;
  beforeAll(() => {
    admin = adminPool();
  });
  afterAll(async () => {
    await dropSchema(admin, b.schema);
    await dropSchema(admin, c.schema);
    await admin.end();
  });

  it('reports the same as one process, with workers, and with a worker SIGKILLed mid-run', async () => {
    const work = tempDir('multi');
    makeFixtureRepo(path.join(work, 'repo'), { extraUnits: EXTRA_UNITS });
    const common = ['--dir', 'repo', '--teammates', '3', '--plain'];
    const store = ['--store', PG_URL];
    const started = Date.now();
    // independent teams: run at once, (c) slowed down a little so the kill lands mid-task
    const [one, workers, chaos] = await Promise.all([
      runCli([...common, '--report', 'one.md', '--durability', 'buffered'], { cwd: work }),
      // (b)'s reviewers compact their context in the workers too
      runCli(
        [
          ...common,
          ...store,
          '--workers',
          '2',
          '--context-window',
          '3600',
          '--report',
          'workers.md',
        ],
        { cwd: work, env: b.env },
      ),
      runCli(
        [...common, ...store, '--workers', '2', '--chaos', '--pace', '20', '--report', 'chaos.md'],
        { cwd: work, env: c.env },
      ),
    ]);
    const wall = Date.now() - started;

    // (a) one process, JSONL
    expect(one.stderr).toBe('');
    expect(one.code, one.stdout).toBe(0);
    checkOutput(workers);
    checkOutput(chaos);
    const reports = ['one.md', 'workers.md', 'chaos.md'].map((f) =>
      readFileSync(path.join(work, f), 'utf8'),
    );
    expect(byUnit(reports[0] as string)).toEqual(EXPECTED);
    expect(normalised(reports[1] as string)).toBe(normalised(reports[0] as string));
    expect(normalised(reports[2] as string)).toBe(normalised(reports[0] as string));

    // (b) two workers
    const bWorkers = startedWorkers(workers.stdout);
    expect(bWorkers.size).toBe(2);
    const bTeam = teamIdOf(workers.stdout);
    const bRows = await teamRows(admin, b.schema, bTeam);
    checkTeam(bRows, bTeam, bWorkers);
    // each compaction in a worker is a line of it, read back into the main process's summary
    const compacted =
      workers.stdout.match(/^\[worker \d\] \S+ reviewer-\d compacted its context \(budget, /gm) ??
      [];
    expect(compacted.length).toBeGreaterThan(0);
    expect(workers.stdout).toContain(`\n  context compactions: ${compacted.length}\n`);
    const stored = bRows.transcript.filter(
      (t) => parseTranscriptEntry(JSON.parse(t.entry)).message.source?.kind === 'compaction',
    );
    expect(stored).toHaveLength(compacted.length);
    expect(one.stdout).toContain('\n  context compactions: none\n');

    // (c) two workers, one SIGKILLed once a reviewer claimed a task, never restarted
    const cWorkers = startedWorkers(chaos.stdout);
    expect(cWorkers.size).toBe(2);
    const killed =
      /chaos: SIGKILLed worker (\d) \(pid \d+, process (\S+)\) while (\S+) works on (task-\d+); its reviewers \(([^)]*)\)/.exec(
        chaos.stdout,
      );
    expect(killed, chaos.stdout).not.toBeNull();
    const [, killedIndex, killedId, owner, , names] = killed as RegExpExecArray;
    expect(cWorkers.get(killedId as string)).toBe(Number(killedIndex));
    const victims = (names as string).split(', ');
    for (const name of victims) {
      expect(chaos.stdout).toMatch(
        new RegExp(
          `chaos: ${name} was taken over (by worker (?!${killedIndex}\\b)\\d|and has retired)`,
        ),
      );
    }
    expect(chaos.stdout).toContain(
      `chaos: every reviewer of worker ${killedIndex} runs in a surviving worker now`,
    );
    // nothing happened in the killed worker after it was killed (its lines carry its own time;
    // some may be shown after the kill line, read late from the pipe)
    const killedAt = /^(\S+) chaos: SIGKILLed/m.exec(chaos.stdout)?.[1] as string;
    for (const m of chaos.stdout.matchAll(
      new RegExp(`^\\[worker ${killedIndex}\\] (\\S+) `, 'gm'),
    )) {
      expect((m[1] as string) <= killedAt, `${m[0]} after the kill at ${killedAt}`).toBe(true);
    }

    const cTeam = teamIdOf(chaos.stdout);
    const cRows = await teamRows(admin, c.schema, cTeam);
    const { reviewers } = checkTeam(cRows, cTeam, cWorkers);
    // The killed worker's reviewers wrote from it (the one that had claimed a task at least: its
    // claim; another may have been placed there without having written yet), then only from a
    // survivor: once taken over, the old process never wrote for them again (the store fences it).
    expect(victims).toContain(owner);
    for (const name of victims) {
      const member = reviewers.find((m) => m.name === name);
      expect(member, name).toBeDefined();
      const writers = cRows.writers.filter((w) => w.actorId === member?.id).map((w) => w.processId);
      const last = writers.lastIndexOf(killedId as string);
      if (name === owner) {
        expect(last, `${name} ran in the killed worker`).toBeGreaterThanOrEqual(0);
      }
      expect(writers.slice(0, last + 1).every((p) => p === killedId)).toBe(true);
      const after = writers.slice(last + 1);
      expect(after.length, `${name} resumed elsewhere`).toBeGreaterThan(0);
      expect(after.every((p) => p !== killedId && cWorkers.has(p as string))).toBe(true);
    }
    expect(wall).toBeLessThan(60_000);
  });
});
