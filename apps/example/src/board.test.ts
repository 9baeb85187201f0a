import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BoardModel, createBoardScreen, renderBoard } from './board.js';
import { compactionLines } from './team-run.js';
import { CLI, makeFixtureRepo, tempDir } from './test-support.js';
import { formatCompactionLine, parseCompactionLine } from './turn-lines.js';

const hasTmux = spawnSync('tmux', ['-V']).status === 0;
if (!hasTmux && process.env.CI !== 'true') {
  console.warn('tmux is not installed: skipping the terminal board test (install tmux to run it)');
}

describe('the board model', () => {
  it('folds records and events into roster, board and feed', () => {
    const board = new BoardModel({ feedSize: 3 });
    const base = { at: 0, teamId: 'T', schemaVersion: 1 as const };
    const member = (seq: number, name: string, phase: 'provisioning' | 'active' | 'retired') => ({
      ...base,
      seq,
      type: 'member' as const,
      member: {
        id: `id-${name}`,
        name,
        description: '',
        agentType: 'reviewer',
        provider: 'p',
        context: 'fresh' as const,
        phase,
      },
    });
    board.apply('lead', { type: 'record', record: member(1, 'reviewer-1', 'provisioning') });
    board.apply('lead', { type: 'record', record: member(2, 'reviewer-1', 'active') });
    board.apply('reviewer-1', { type: 'status', status: 'running' });
    const task = {
      id: 'task-1',
      revision: 1,
      subject: 'Review a',
      description: 'd',
      status: 'pending' as const,
      creatorId: 'T',
      blockedBy: [],
      writeScopes: [],
    };
    board.apply('lead', { type: 'record', record: { ...base, seq: 3, type: 'task', task } });
    board.apply('reviewer-1', {
      type: 'record',
      record: {
        ...base,
        seq: 4,
        type: 'task',
        task: { ...task, revision: 2, status: 'completed', ownerId: 'id-reviewer-1' },
      },
    });
    board.apply('reviewer-1', {
      type: 'model.step',
      step: 1,
      usage: { inputTokens: 10, outputTokens: 2 },
    });
    expect(board.progress()).toEqual({ done: 1, total: 1 });
    expect(board.feed).toEqual([
      'reviewer-1 joins the team',
      'lead created task-1 "Review a"',
      'task-1 pending -> completed (reviewer-1)',
    ]);
    const screen = renderBoard(board, { title: 'T', width: 80, elapsedMs: 1500 });
    expect(screen).toContain('reviewer-1');
    expect(screen).toContain('running');
    expect(screen).toContain('[##############################] 1/1');
    expect(screen).toContain('tokens 10/2');
  });
});

describe('the board and the summary on context compactions', () => {
  const member = (name: string) => ({
    at: 0,
    teamId: 'T',
    schemaVersion: 1 as const,
    seq: 1,
    type: 'member' as const,
    member: {
      id: `id-${name}`,
      name,
      description: '',
      agentType: 'reviewer',
      provider: 'p',
      context: 'fresh' as const,
      phase: 'active' as const,
    },
  });
  const compacted = (tokensBefore: number, tokensAfter: number, durationMs: number) => ({
    type: 'context.compacted' as const,
    compactionId: `c-${tokensBefore}`,
    reason: 'budget' as const,
    tokensBefore,
    tokensAfter,
    estimated: false,
    replacedMessages: 12,
    retainedMessages: 1,
    durationMs,
    policy: 'deterministic',
  });
  const rosterLine = (screen: string, name: string) =>
    screen.split('\n').find((line) => line.startsWith(`  ${name} `)) ?? '';

  it('shows compacting… while one is in flight, then the count and the last one per member', () => {
    const board = new BoardModel();
    board.apply('lead', { type: 'record', record: member('reviewer-1') });
    board.apply('lead', { type: 'record', record: member('reviewer-2') });
    const render = () => renderBoard(board, { title: 'T', width: 120, elapsedMs: 0 });
    expect(rosterLine(render(), 'reviewer-1')).not.toContain('compact');

    board.apply('reviewer-1', {
      type: 'context.compacting',
      reason: 'budget',
      tokensBefore: 11_234,
      estimated: false,
    });
    expect(rosterLine(render(), 'reviewer-1')).toContain('compacting…');
    expect(rosterLine(render(), 'reviewer-2')).not.toContain('compact');

    const line = board.apply('reviewer-1', compacted(11_234, 3_100, 4));
    expect(line).toBe(
      'reviewer-1 compacted its context: 11.2k -> 3.1k tokens (12 messages summarised by the deterministic policy in 4 ms)',
    );
    expect(board.feed.at(-1)).toBe(line);
    let screen = render();
    expect(rosterLine(screen, 'reviewer-1')).toContain('compacted 1× · 11.2k→3.1k tok');
    expect(rosterLine(screen, 'reviewer-1')).not.toContain('compacting…');
    expect(screen).toMatch(/tokens 0\/0 {2}compactions 1$/);

    board.apply('reviewer-1', {
      type: 'context.compacting',
      reason: 'budget',
      tokensBefore: 9_800,
      estimated: true,
    });
    expect(rosterLine(render(), 'reviewer-1')).toContain(
      'compacted 1× · 11.2k→3.1k tok · compacting…',
    );
    board.apply('reviewer-1', compacted(9_800, 2_940, 2));
    board.apply('reviewer-2', compacted(20_500, 6_000, 7));
    screen = render();
    expect(rosterLine(screen, 'reviewer-1')).toContain('compacted 2× · 9.8k→2.9k tok');
    expect(rosterLine(screen, 'reviewer-2')).toContain('compacted 1× · 20.5k→6.0k tok');
    expect(screen).toContain('compactions 3');

    // a compaction that failed ends the turn: compacting… does not stay on the board
    board.apply('reviewer-2', {
      type: 'context.compacting',
      reason: 'overflow',
      tokensBefore: 30_000,
      estimated: false,
    });
    board.apply('reviewer-2', { type: 'turn.end', stopReason: 'error', steps: 1, text: '' });
    expect(rosterLine(render(), 'reviewer-2')).not.toContain('compacting…');

    expect(compactionLines(board.compactions)).toEqual([
      '  context compactions: 3',
      '    reviewer-1  2×  11.2k→3.1k, 9.8k→2.9k tokens (21.0k→6.0k in all), 6 ms',
      '    reviewer-2  1×  20.5k→6.0k tokens, 7 ms',
    ]);
  });

  it('the summary says when there was none, and sums up a long list', () => {
    expect(compactionLines([])).toEqual(['  context compactions: none']);
    const many = Array.from({ length: 8 }, (_, i) => ({
      member: 'lead',
      reason: i === 7 ? ('overflow' as const) : ('budget' as const),
      tokensBefore: 1000 * (i + 10),
      tokensAfter: 500,
      estimated: i === 0,
      replacedMessages: 3,
      durationMs: 1,
      policy: 'model',
    }));
    expect(compactionLines(many)).toEqual([
      '  context compactions: 8',
      '    lead  8×  … 2 earlier, 12.0k→500, 13.0k→500, 14.0k→500, 15.0k→500, 16.0k→500, 17.0k→500 tokens (108.0k→4.0k in all), 8 ms, 1 after an overflow, some estimated',
    ]);
  });

  it('a worker prints a compaction line the main process reads back exactly', () => {
    const stat = {
      member: 'reviewer-2',
      reason: 'overflow' as const,
      policy: 'model',
      tokensBefore: 123_456,
      tokensAfter: 7_890,
      estimated: true,
      replacedMessages: 40,
      durationMs: 2_345,
    };
    const line = formatCompactionLine(Date.UTC(2025, 0, 1, 10, 0, 2, 310), stat);
    expect(line).toBe(
      '10:00:02.310 reviewer-2 compacted its context (overflow, model): 123456 -> 7890 tokens (estimated), 40 message(s) replaced, 2345 ms',
    );
    expect(parseCompactionLine(line)).toEqual(stat);
    expect(parseCompactionLine(`[worker 1] ${line}`)).toBeUndefined();
    expect(parseCompactionLine('10:00:02.310 reviewer-2 list_files({})')).toBeUndefined();
  });
});

describe('the board screen', () => {
  const terminal = () => {
    const writes: string[] = [];
    const write = (text: string) => writes.push(text);
    return { writes, screen: createBoardScreen({ write, isTTY: true, columns: 80, rows: 40 }) };
  };
  const ERASE_LINE = '\x1b[2K';
  const count = (text: string, part: string) => text.split(part).length - 1;

  it('redraws in place: one synchronized write that erases just the last screen, no clear', () => {
    const { writes, screen } = terminal();
    screen.draw('title 0.1s\nalpha running\nbeta idle\nfeed one');
    screen.draw('title 0.2s\nalpha running\nbeta running\nfeed one');
    screen.draw('title 0.2s\nalpha running\nbeta running\nfeed one');
    screen.done();
    expect(writes).toHaveLength(2); // an unchanged screen writes nothing
    expect(writes[0]).toBe(
      '\x1b[?2026htitle 0.1s\nalpha running\nbeta idle\nfeed one\n\x1b[?2026l',
    );
    const second = writes[1] ?? '';
    expect(second.startsWith('\x1b[?2026h') && second.endsWith('\x1b[?2026l')).toBe(true);
    // the four lines of the last screen and the line the cursor was left on, nothing above
    expect(count(second, ERASE_LINE)).toBe(5);
    expect(second).toContain('title 0.2s\nalpha running\nbeta running\nfeed one\n');
    expect(writes.join('')).not.toMatch(/\x1b\[[0-3]?J|\x1b\[H/);
  });

  it('rewrites only the changed lines when the top of the screen stays the same', () => {
    const { writes, screen } = terminal();
    screen.draw('title\nalpha running\nbeta idle\nfeed one');
    screen.draw('title\nalpha running\nbeta running\nfeed one');
    const second = writes[1] ?? '';
    expect(second).toContain('beta running');
    expect(second).not.toContain('alpha');
    expect(second).not.toContain('feed one');
    expect(count(second, ERASE_LINE)).toBe(1);
  });
});

describe.skipIf(!hasTmux && process.env.CI !== 'true')('the live terminal board', () => {
  it('renders roster, board and feed in a terminal and updates them', async () => {
    const work = tempDir('tty');
    const repo = path.join(work, 'repo');
    makeFixtureRepo(repo, { extraUnits: 2 });
    const session = `teamwire-board-${process.pid}`;
    const command = [
      process.execPath,
      CLI,
      '--dir',
      repo,
      '--state-dir',
      path.join(work, 'state'),
      '--report',
      path.join(work, 'r.md'),
      '--pace',
      '40',
      '--durability',
      'buffered',
    ]
      .map((a) => `'${a}'`)
      .join(' ');
    const raw = path.join(work, 'raw-output');
    execFileSync('tmux', [
      'new-session',
      '-d',
      '-s',
      session,
      '-x',
      '120',
      '-y',
      '50',
      // the pause lets pipe-pane below attach before the first screen
      `sleep 0.5; ${command}; sleep 30`,
    ]);
    execFileSync('tmux', ['pipe-pane', '-t', session, `cat > '${raw}'`]);
    const capture = () => execFileSync('tmux', ['capture-pane', '-p', '-t', session]).toString();
    const screens: string[] = [];
    try {
      // poll the screen until the run is over; a deadline bounds the wait
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const screen = capture();
        if (screens.at(-1) !== screen) screens.push(screen);
        if (screen.includes('Review finished.')) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      spawnSync('tmux', ['kill-session', '-t', session]);
    }
    const final = screens.at(-1) ?? '';
    expect(final).toContain('Review finished.');
    expect(final).toMatch(/Tasks\s+\[#+\] 7\/7/);
    for (const name of ['lead', 'reviewer-1', 'reviewer-2', 'reviewer-3'])
      expect(final).toContain(name);
    expect(final).toContain('Feed');
    // the board was redrawn while the team worked: progress moved through intermediate states
    const progress = new Set(
      screens.map((s) => /Tasks\s+\[[#.]+\] (\d+)\/7/.exec(s)?.[1]).filter(Boolean),
    );
    expect(progress.size).toBeGreaterThanOrEqual(3);
    expect(screens.some((s) => /reviewer-\d\s+running/.test(s))).toBe(true);
    // drawn in place as synchronized updates, never by clearing the whole screen (which flickered)
    const bytes = readFileSync(raw, 'latin1');
    expect(bytes).toContain('Review finished.');
    expect(bytes).toContain('\x1b[?2026h');
    expect(bytes).not.toContain('\x1b[2J');
  });
});
