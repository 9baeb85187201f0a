import path from 'node:path';
import {
  createEventHub,
  foldTeam,
  openTeam,
  parseTeamRecord,
  type TeamRecord,
  type TeamService,
} from '@teamwire/core';
import { createGitWorkspaces } from '@teamwire/git-workspaces';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FIXER_AGENT_TYPE, FixSettings, fixTeamSetup } from './fix-app.js';
import { PgTeamDatabase } from './pg-team.js';
import { adminPool, describePg, dropSchema, freshSchema, PG_URL } from './pg-test-support.js';
import { reportTool } from './team-run.js';
import { FIX_EXPECTED, gitOut, makeFixRepo, runCli, tempDir } from './test-support.js';

/** The worker processes a run started, from its `started worker n (pid p, process id)` lines. */
function startedWorkers(stdout: string): Set<string> {
  return new Set(
    [...stdout.matchAll(/started worker \d+ \(pid \d+, process (\S+)\)/g)].map(
      (m) => m[1] as string,
    ),
  );
}

const WITHOUT_REPO = 'aaa-process-without-the-repository';

describePg('demo fix --store --workers 2', () => {
  const { schema, env } = freshSchema();
  const admin = adminPool();
  beforeAll(async () => {
    await dropSchema(admin, schema);
  });
  afterAll(async () => {
    await dropSchema(admin, schema);
    await admin.end();
  });

  /** The team id and settings of the one fix kept in the app's table, once it is there. */
  async function savedTeam(): Promise<{ teamId: string; settings: FixSettings }> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const rows = await admin
        .query<{ team_id: string; settings: unknown }>(
          `SELECT team_id, settings FROM "${schema}_example".review_settings`,
        )
        .then(
          (r) => r.rows,
          () => [],
        );
      const row = rows[0];
      if (row !== undefined) {
        return { teamId: row.team_id, settings: FixSettings.parse(row.settings) };
      }
      if (Date.now() > deadline) throw new Error('the fix never saved its settings');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /**
   * A process of the team willing to run the reviewers, opened like a worker but on a machine
   * without the scratch repository: its workspace provider does not reach it. The first by id
   * and with no member, the placement would pick it first if it ignored where the repository is.
   */
  async function joinWithoutRepository(teamId: string, settings: FixSettings, cwd: string) {
    const db = await PgTeamDatabase.open({ url: PG_URL, env, processId: WITHOUT_REPO });
    const store = await db.openStore(teamId, { lead: false, agentTypes: [FIXER_AGENT_TYPE] });
    const fixersAtOpen: string[] = [];
    for await (const record of store.log.read()) {
      if (record.type === 'member' && record.member.agentType === FIXER_AGENT_TYPE) {
        fixersAtOpen.push(record.member.name);
      }
    }
    const provider = createGitWorkspaces({ repoDir: settings.repo, base: settings.base });
    const turns: string[] = [];
    const hub = createEventHub({ teamId, log: store.log });
    const team: TeamService = await openTeam({
      ...fixTeamSetup(settings, {
        teamId,
        cwd,
        paceMs: 0,
        report: reportTool(settings.report, () => {}),
        workspaces: { ...provider, reachable: async () => false },
      }),
      teamId,
      log: store.log,
      transcripts: store.transcripts,
      events: {
        publish(agent, event) {
          if (event.type === 'turn.start') turns.push(agent);
          hub.publish(agent, event);
        },
      },
    });
    return {
      fixersAtOpen,
      turns,
      async close() {
        await team.dispose();
        hub.close();
        await store.close();
        await db.end();
      },
    };
  }

  it('places every reviewer where the scratch repository is and merges their worktrees', async () => {
    const work = tempDir('fix-pg');
    const repo = path.join(work, 'repo');
    makeFixRepo(repo);
    const run = runCli(['fix', '--dir', 'repo', '--store', PG_URL, '--workers', '2', '--plain'], {
      cwd: work,
      env,
    });
    const { teamId, settings } = await savedTeam();
    const elsewhere = await joinWithoutRepository(teamId, settings, work);
    let result: Awaited<typeof run>;
    try {
      result = await run;
    } finally {
      await elsewhere.close();
    }
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Fix finished.');

    // the process without the repository was there before any reviewer, and ran none
    expect(elsewhere.fixersAtOpen).toEqual([]);
    expect(elsewhere.turns).toEqual([]);

    // the result branch holds each folder's REVIEW.md with its numbers, and nothing else new
    const base = gitOut(repo, ['rev-parse', 'main']).trim();
    const changed = gitOut(settings.repo, ['diff', '--name-only', base, settings.resultBranch]);
    expect(changed.split('\n').filter(Boolean)).toEqual([
      'alpha/REVIEW.md',
      'beta/REVIEW.md',
      'gamma/REVIEW.md',
    ]);
    for (const [unit, lines] of Object.entries(FIX_EXPECTED)) {
      const text = gitOut(settings.repo, ['show', `${settings.resultBranch}:${unit}/REVIEW.md`]);
      for (const line of lines) expect(text.split('\n')).toContain(line);
    }

    // every reviewer ran in a worker (which reaches the repository): its log records and its
    // turns were written there, and its worktree is a worktree of the scratch repository
    const workers = startedWorkers(result.stdout);
    expect(workers.size).toBe(2);
    const log = await admin.query<{
      record: string;
      actor_id: string | null;
      process_id: string | null;
    }>(
      `SELECT record, actor_id, process_id FROM "${schema}".team_log WHERE team_id = $1 ORDER BY seq`,
      [teamId],
    );
    const records: TeamRecord[] = log.rows.map((r) => parseTeamRecord(JSON.parse(r.record)));
    const team = foldTeam(records, { teamId });
    const fixers = team.roster.filter((m) => m.agentType === FIXER_AGENT_TYPE);
    expect(fixers.map((m) => m.phase)).toEqual(['retired', 'retired', 'retired']);
    const fixerIds = new Set(fixers.map((m) => m.id));
    const writers = new Set(
      log.rows
        .filter((r) => r.actor_id !== null && fixerIds.has(r.actor_id))
        .map((r) => r.process_id),
    );
    expect(writers.size).toBeGreaterThan(0);
    for (const writer of writers) expect(workers.has(writer as string)).toBe(true);
    const turns = await admin.query<{ process_id: string | null }>(
      `SELECT DISTINCT process_id FROM "${schema}".transcript
        WHERE team_id = $1 AND member_id = ANY($2::text[])`,
      [teamId, [...fixerIds]],
    );
    for (const row of turns.rows) expect(workers.has(row.process_id as string)).toBe(true);
    const worktrees = gitOut(settings.repo, ['worktree', 'list', '--porcelain']);
    for (const m of fixers) {
      expect(worktrees).toContain(`branch refs/heads/teamwire/${teamId}/${m.name}`);
    }
  });
});
