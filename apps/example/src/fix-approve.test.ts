import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { foldTeam, type TeamRecord } from '@teamwire/core';
import { readTeamLog } from '@teamwire/storage';
import { describe, expect, it } from 'vitest';
import { parseArgs, UsageError } from './args.js';
import { formatFixSummary, runFix } from './fix-app.js';
import { parseAnswer } from './fix-approvals.js';
import { MAX_COMMIT_REFUSALS } from './policy-fix-reviewer.js';
import { runExitCode } from './run-summary.js';
import {
  CLI,
  FIX_EXPECTED,
  gitOut,
  makeFixRepo,
  repoSnapshot,
  tempDir,
  transcriptOf,
} from './test-support.js';

/** A request line as the CLI prints it: its id, the reviewer and the folder. */
const REQUEST = /^approval (\S+): (\S+) wants to commit ([^,:]+)[,:]/;

/**
 * Runs `fix --approve` in this process; `answer` gives the line to type for each request (by its
 * folder and how many requests of that folder came before), or undefined to leave it waiting.
 */
async function fixApproving(
  work: string,
  answer: (folder: string, asked: number) => string | undefined,
  extra: string[] = [],
) {
  const command = parseArgs(
    ['fix', '--dir', 'repo', '--durability', 'buffered', '--plain', ...extra],
    { cwd: work },
  );
  if (command.command !== 'fix') throw new Error('expected a fix command');
  const stdin = new PassThrough();
  const asked = new Map<string, number>();
  let text = '';
  let partial = '';
  const stdout = {
    write(chunk: string) {
      text += chunk;
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const m = REQUEST.exec(line);
        if (!m) continue;
        const [, id, , folder] = m as unknown as [string, string, string, string];
        const n = asked.get(folder) ?? 0;
        asked.set(folder, n + 1);
        const typed = answer(folder, n);
        if (typed !== undefined) stdin.write(`${id} ${typed}\n`);
      }
      return true;
    },
  };
  const summary = await runFix(command, { stdout, stderr: stdout, stdin, cwd: work, env: {} });
  return { summary, out: text, asked };
}

async function recordsOf(teamDir: string): Promise<TeamRecord[]> {
  return (await readTeamLog(teamDir)).records;
}

/** Model calls per member, as the transcripts hold them (one assistant message per answer). */
function modelCalls(teamDir: string, records: readonly TeamRecord[], teamId: string) {
  const team = foldTeam(records, { teamId });
  return new Map(
    team.roster.map((m) => [
      m.name,
      transcriptOf(teamDir, m.id).filter((x) => x.role === 'assistant' && x.source === undefined)
        .length,
    ]),
  );
}

const count = (records: readonly TeamRecord[], type: TeamRecord['type']) =>
  records.filter((r) => r.type === type).length;

/** Commits on each fixer's branch beyond the base. */
function branchCommits(repo: string, scratch: string, teamId: string): number[] {
  const base = gitOut(repo, ['rev-parse', 'main']).trim();
  return [1, 2, 3].map(
    (n) =>
      Number(
        gitOut(scratch, ['rev-list', '--count', `${base}..teamwire/${teamId}/fixer-${n}`]).trim(),
      ) || 0,
  );
}

describe('fix --approve on the command line and at the terminal', () => {
  it('reads --approve and --approve-expires, and refuses one without the other', () => {
    const fix = (...args: string[]) => parseArgs(['fix', ...args], { cwd: '/w' });
    expect(fix('--approve')).toMatchObject({ command: 'fix', approve: {} });
    expect(fix('--approve', '--approve-expires', '1500')).toMatchObject({
      approve: { expiresInMs: 1500 },
    });
    expect(fix()).not.toHaveProperty('approve');
    expect(() => fix('--approve-expires', '1500')).toThrow(
      new UsageError('--approve-expires needs --approve'),
    );
    expect(() => fix('--approve', '--approve-expires', '5')).toThrow(UsageError);
    expect(() => parseArgs(['--approve'], { cwd: '/w' })).toThrow(UsageError);
  });

  it('understands y, n <reason>, and either after an approval id', () => {
    expect(parseAnswer('y')).toEqual({ decision: 'approved' });
    expect(parseAnswer('  n   too  terse ')).toEqual({ decision: 'rejected', reason: 'too terse' });
    expect(parseAnswer('01ABC yes')).toEqual({ approvalId: '01ABC', decision: 'approved' });
    expect(parseAnswer('01ABC n later')).toEqual({
      approvalId: '01ABC',
      decision: 'rejected',
      reason: 'later',
    });
    expect(parseAnswer('')).toBeUndefined();
    expect(parseAnswer('maybe')).toHaveProperty('error');
  });
});

describe('demo fix --approve, answered from stdin', () => {
  it('approving every commit gives the result of a run without --approve, each commit run once', async () => {
    const work = tempDir('fix-approve');
    const repo = path.join(work, 'repo');
    makeFixRepo(repo);
    const before = repoSnapshot(repo);

    const plain = await fixApproving(work, () => 'y');
    const approved = await fixApproving(work, () => 'y', ['--approve']);
    expect(plain.asked.size).toBe(0);
    expect([...approved.asked.values()]).toEqual([1, 1, 1]);
    for (const { summary } of [plain, approved]) {
      expect(summary.missing).toEqual([]);
      expect(runExitCode(summary)).toBe(0);
    }
    expect(approved.summary.refused).toEqual([]);
    expect(repoSnapshot(repo)).toBe(before);

    // the same tree on the result branch, the same REVIEW.md files
    const tree = (s: typeof plain.summary) =>
      gitOut(s.repo, ['rev-parse', `${s.resultBranch}^{tree}`]);
    expect(tree(approved.summary)).toBe(tree(plain.summary));
    for (const [unit, lines] of Object.entries(FIX_EXPECTED)) {
      const text = gitOut(approved.summary.repo, [
        'show',
        `${approved.summary.resultBranch}:${unit}/REVIEW.md`,
      ]);
      for (const line of lines) expect(text.split('\n')).toContain(line);
      expect(text).not.toContain('## Approval');
    }

    // each commit asked once, approved once, run once
    const records = await recordsOf(approved.summary.teamDir);
    expect(count(records, 'approval.requested')).toBe(3);
    expect(count(records, 'approval.decided')).toBe(3);
    expect(count(records, 'approval.started')).toBe(3);
    expect(
      branchCommits(repo, approved.summary.repo, approved.summary.teamId).reduce((a, b) => a + b),
    ).toBe(3);
    expect(approved.out).toMatch(/approval \S+: approved by the host \(fixer-1's commit_changes\)/);

    // the reviewers make the same model calls: a commit waits for its decision without a model call
    const plainCalls = modelCalls(
      plain.summary.teamDir,
      await recordsOf(plain.summary.teamDir),
      plain.summary.teamId,
    );
    const approvedCalls = modelCalls(approved.summary.teamDir, records, approved.summary.teamId);
    for (const name of ['fixer-1', 'fixer-2', 'fixer-3']) {
      expect(approvedCalls.get(name), name).toBe(plainCalls.get(name));
    }
    // at most one more look (task_list, list_members, wait_for_team) per approval
    expect(approvedCalls.get('lead')).toBeLessThanOrEqual((plainCalls.get('lead') ?? 0) + 3 * 3);
  });

  it('a commit rejected once is revised, noting the reason, and committed when approved', async () => {
    const work = tempDir('fix-approve-once');
    makeFixRepo(path.join(work, 'repo'));
    const { summary, asked, out } = await fixApproving(
      work,
      (folder, n) => (folder === 'beta' && n === 0 ? 'n name the FIXME first' : 'y'),
      ['--approve'],
    );
    expect(Object.fromEntries(asked)).toEqual({ alpha: 1, beta: 2, gamma: 1 });
    expect(summary.missing).toEqual([]);
    expect(runExitCode(summary)).toBe(0);
    expect(out).toMatch(/approval \S+: rejected by the host: name the FIXME first/);

    const beta = gitOut(summary.repo, ['show', `${summary.resultBranch}:beta/REVIEW.md`]);
    for (const line of FIX_EXPECTED.beta ?? []) expect(beta.split('\n')).toContain(line);
    expect(beta).toContain('- refusal 1: it was rejected: name the FIXME first');
    const alpha = gitOut(summary.repo, ['show', `${summary.resultBranch}:alpha/REVIEW.md`]);
    expect(alpha).not.toContain('## Approval');

    const records = await recordsOf(summary.teamDir);
    expect(count(records, 'approval.requested')).toBe(4);
    expect(count(records, 'approval.started')).toBe(3);
    expect(branchCommits(path.join(work, 'repo'), summary.repo, summary.teamId)).toEqual([1, 1, 1]);
    // the refused reviewer spent two more model calls (write again, commit again) than the others
    const calls = modelCalls(summary.teamDir, records, summary.teamId);
    expect((calls.get('fixer-2') ?? 0) - (calls.get('fixer-1') ?? 0)).toBe(2);
    const report = readFileSync(summary.reportPath, 'utf8');
    expect(report).toMatch(/\| beta \| fixer-2 \| `[^`]+` \| merged \| 1 \| 1 \|/);
  });

  it('a folder refused three times is completed without its commit, and the run fails naming it', async () => {
    const work = tempDir('fix-approve-refused');
    makeFixRepo(path.join(work, 'repo'));
    const { summary, asked } = await fixApproving(
      work,
      (folder, n) => (folder === 'gamma' ? `n not yet (${n + 1})` : 'y'),
      ['--approve'],
    );
    expect(asked.get('gamma')).toBe(MAX_COMMIT_REFUSALS);
    expect(runExitCode(summary)).toBe(1);
    expect(summary.refused.map((r) => [r.folder, r.reviewer, r.refusals])).toEqual([
      ['gamma', 'fixer-3', 3],
    ]);
    expect(summary.missing).toEqual([
      'gamma: its commit was refused 3 time(s) (fixer-3; last: rejected: not yet (3)), so it is not on the result branch',
    ]);
    const printed = formatFixSummary(summary);
    expect(printed).toMatch(/^Fix finished with work missing\.$/m);
    expect(printed).toContain('    - gamma: its commit was refused 3 time(s)');

    // every task is completed (the reviewer said it gave up); gamma is not on the result branch
    const records = await recordsOf(summary.teamDir);
    const team = foldTeam(records, { teamId: summary.teamId });
    expect(team.tasks.every((t) => t.status === 'completed')).toBe(true);
    expect(count(records, 'approval.started')).toBe(2);
    expect(branchCommits(path.join(work, 'repo'), summary.repo, summary.teamId)).toEqual([1, 1, 0]);
    const base = gitOut(path.join(work, 'repo'), ['rev-parse', 'main']).trim();
    expect(
      gitOut(summary.repo, ['diff', '--name-only', base, summary.resultBranch]).trim().split('\n'),
    ).toEqual(['alpha/REVIEW.md', 'beta/REVIEW.md']);
    const fixer3 = team.roster.find((m) => m.name === 'fixer-3');
    const words = transcriptOf(summary.teamDir, fixer3?.id ?? '')
      .filter((m) => m.role === 'assistant')
      .map((m) => m.content.map((c) => ('text' in c ? c.text : '')).join(''));
    expect(words.at(-1)).toBe('gamma is done (task-3) without its commit: it was refused 3 times.');
    // two more model calls (write again, commit again) per refusal but the last, after which it
    // completes the task as an approved reviewer does
    const calls = modelCalls(summary.teamDir, records, summary.teamId);
    expect((calls.get('fixer-3') ?? 0) - (calls.get('fixer-1') ?? 0)).toBe(
      2 * (MAX_COMMIT_REFUSALS - 1),
    );
    const report = readFileSync(summary.reportPath, 'utf8');
    expect(report).toMatch(/\| gamma \| fixer-3 \| `[^`]+` \| not committed \| 0 \| 0 \|/);
    expect(report).toContain('## Not committed');
    expect(report).toContain('- gamma (fixer-3)');
  });
});

/** The CLI, answering nothing; SIGKILLed once `n` requests are printed. */
function killWhenAsked(args: readonly string[], cwd: string, n: number) {
  return new Promise<{ stdout: string; signal: NodeJS.Signals | null }>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: { ...process.env, INIT_CWD: cwd },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const asked = stdout.split('\n').filter((l) => REQUEST.test(l)).length;
      if (asked >= n && child.exitCode === null && !child.killed) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('close', (_code, signal) => resolve({ stdout, signal }));
  });
}

/** The CLI, approving every request it prints by its id; resolves when it exits. */
function approveAll(args: readonly string[], cwd: string) {
  return new Promise<{ stdout: string; stderr: string; code: number | null; ids: string[] }>(
    (resolve, reject) => {
      const child = spawn(process.execPath, [CLI, ...args], {
        cwd,
        env: { ...process.env, INIT_CWD: cwd },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      let partial = '';
      const ids: string[] = [];
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        partial += d.toString();
        const lines = partial.split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          const id = REQUEST.exec(line)?.[1];
          if (id === undefined) continue;
          ids.push(id);
          child.stdin.write(`${id} y\n`);
        }
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.stdin.on('error', () => {});
      child.on('error', reject);
      child.on('close', (code) => resolve({ stdout, stderr, code, ids }));
    },
  );
}

describe('killing demo fix --approve while commits wait for approval', () => {
  it('keeps the requests across --resume: deciding them then finishes the run, each commit once', async () => {
    const work = tempDir('fix-approve-kill');
    const repo = path.join(work, 'repo');
    makeFixRepo(repo);
    const common = ['--state-dir', path.join(work, 'state'), '--plain'];

    const first = await killWhenAsked(['fix', '--dir', repo, '--approve', ...common], work, 3);
    expect(first.signal).toBe('SIGKILL');
    const id = /team (\S+)/.exec(first.stdout)?.[1] as string;
    const teamDir = path.join(work, 'state', 'teams', id);
    const mid = await recordsOf(teamDir);
    const decided = new Set(
      mid.flatMap((r) => (r.type === 'approval.decided' ? [r.approvalId] : [])),
    );
    const pending = mid
      .flatMap((r) => (r.type === 'approval.requested' ? [r.approval.id] : []))
      .filter((a) => !decided.has(a));
    expect(pending).toHaveLength(3);
    expect(count(mid, 'approval.started')).toBe(0);

    // the resumed run prints the requests still waiting (the same ones) and is answered
    const last = await approveAll(['fix', '--resume', id, ...common], work);
    expect(last.stderr).toBe('');
    expect(last.code).toBe(0);
    expect(last.stdout).toContain('Fix finished.');
    expect(last.ids).toEqual(pending);

    const records = await recordsOf(teamDir);
    const team = foldTeam(records, { teamId: id });
    expect(team.tasks.map((t) => t.status)).toEqual(Array(4).fill('completed'));
    expect(team.pendingMail).toEqual([]);
    expect(count(records, 'approval.requested')).toBe(3);
    expect(count(records, 'approval.started')).toBe(3);
    const scratch = path.join(work, 'state', 'fix', id, 'repo');
    expect(branchCommits(repo, scratch, id)).toEqual([1, 1, 1]);
    const base = gitOut(repo, ['rev-parse', 'main']).trim();
    expect(
      gitOut(scratch, ['diff', '--name-only', base, `teamwire-fix/${id}`])
        .trim()
        .split('\n'),
    ).toEqual(['alpha/REVIEW.md', 'beta/REVIEW.md', 'gamma/REVIEW.md']);
  });
});
