// One run of the example's team: the real CLI (`node dist/cli.js`), on the offline policy model,
// perturbed as its plan says (or not at all, for a baseline), then checked from its durable
// records once every process of it has exited.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createRng } from '../../../scripts/crash-support.mjs';
import { folderName, makeFixRepo, makeReviewRepo } from './fixtures.mjs';
import { APPROVAL_ODDS, LEASE_MS } from './scenario.mjs';
import { checkExit, checkRun, readTeam, teamFolder } from './verify.mjs';

export const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');

/** How long the main process may take to exit after SIGINT once its run is done. */
const EXIT_GRACE_MS = 20_000;
/** How long a joined worker may take to exit by itself after the main process exited. */
const JOINED_GRACE_MS = 10_000;
/** The lines of a failed run's output shown with its failure. */
const TAIL_LINES = 60;

/**
 * Runs `plan`'s team; `perturb` false runs it untouched (the baseline). Resolves with the checks'
 * result: `violations` (empty: the run holds), `calls` (model calls per member), what each
 * perturbation did (`applied`), and the run's folder and schema (removed after a pass unless
 * `keep`).
 */
export async function runTeam(plan, options) {
  const { perturb, url, timeoutMs, keep, admin } = options;
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'teamwire-liveness-'));
  const repo = join(dir, 'repo');
  const stateDir = join(dir, 'state');
  const reportFile = join(dir, 'team-report.md');
  const { team } = plan;
  const folders = perturb || team.kind !== 'fix' ? team.folders : baselineFolders(plan);
  if (team.kind === 'fix') makeFixRepo(repo, folders);
  else makeReviewRepo(repo, folders);
  mkdirSync(stateDir);
  const schema = team.kind === 'spread' ? `tw_live_${randomBytes(6).toString('hex')}` : undefined;
  const env =
    schema === undefined
      ? {}
      : { TEAMWIRE_EXAMPLE_PG_SCHEMA: schema, TEAMWIRE_EXAMPLE_LEASE_MS: String(LEASE_MS) };
  const common = ['--dir', repo, '--plain', '--report', reportFile];
  // `fix --approve`: the perturbed run asks before each commit, the harness answers on stdin
  const approvals = perturb ? plan.perturbations.find((p) => p.kind === 'approvals') : undefined;
  const approveArgs =
    approvals === undefined
      ? []
      : [
          '--approve',
          ...(approvals.expiresMs === undefined
            ? []
            : ['--approve-expires', String(approvals.expiresMs)]),
        ];
  const args =
    team.kind === 'fix'
      ? ['fix', ...common, '--state-dir', stateDir, '--durability', 'buffered', ...approveArgs]
      : [
          ...common,
          '--teammates',
          String(team.teammates),
          '--pace',
          String(team.paceMs),
          '--web',
          ...(team.kind === 'spread'
            ? ['--store', url, '--workers', String(team.workers)]
            : [
                '--state-dir',
                stateDir,
                '--durability',
                'buffered',
                '--context-window',
                String(team.windowTokens),
              ]),
        ];

  const run = new RunningTeam({
    args,
    cwd: dir,
    env,
    url,
    schema,
    admin,
    paceMs: team.paceMs,
    answers: approvals !== undefined,
  });
  const violations = [];
  const applied = [];
  try {
    run.start();
    const work = perturb
      ? plan.perturbations.map((p) =>
          run.perturb(p).then(
            (done) => applied.push({ ...p, ...done }),
            (error) => violations.push(`perturbation ${p.kind} failed: ${error?.stack ?? error}`),
          ),
        )
      : [];
    const ended = await run.finish(timeoutMs);
    run.stopWaiting();
    await Promise.all(work);
    violations.push(...ended.problems);
  } finally {
    await run.cleanUp();
  }

  let checked;
  if (run.teamId === undefined) {
    violations.push('the run printed no team id');
  } else {
    try {
      const read = await readTeam({
        teamId: run.teamId,
        teamDir: teamFolder(stateDir, run.teamId),
        url: schema === undefined ? undefined : url,
        schema,
      });
      checked = checkRun({ plan: { ...plan, team: { ...team, folders } }, read, reportFile });
      violations.push(...checked.violations);
      if (approvals !== undefined) {
        // what was decided, as the log holds it: the allowance of model calls counts on it
        const hit = applied.find((a) => a.kind === 'approvals');
        if (hit !== undefined) {
          const refused = [...checked.refused.keys()];
          Object.assign(hit, checked.approvals, {
            note: `${hit.note}; ${checked.approvals.refusals} refused, ${refused.length === 0 ? 'no folder' : refused.join(', ')} refused for good`,
          });
        }
        violations.push(
          ...checkExit({ exit: run.exit, lines: run.lines, refused: checked.refused }),
        );
      }
    } catch (error) {
      violations.push(`reading the team's records failed: ${error?.stack ?? error}`);
    }
  }
  const result = {
    ok: violations.length === 0,
    violations,
    applied,
    calls: checked?.calls ?? new Map(),
    totalCalls: checked?.totalCalls ?? 0,
    records: checked?.records ?? 0,
    deadLetters: checked?.deadLetters ?? new Map(),
    failedMembers: checked?.failedMembers ?? [],
    errorCodes: run.errorCodes,
    wallMs: Date.now() - started,
    dir,
    schema,
    teamId: run.teamId,
    tail: run.lines.slice(-TAIL_LINES),
    folders,
  };
  if (!keep) {
    if (result.ok) rmSync(dir, { recursive: true, force: true });
    if (result.ok && schema !== undefined) await dropSchema(admin, schema);
  }
  return result;
}

/** The folders of a fix baseline: as many as the team has slots, so no limit is reached. */
export function baselineFolders(plan) {
  const extra = plan.perturbations.find((p) => p.kind === 'limit')?.extraFolders ?? 0;
  return plan.team.folders - extra;
}

export async function dropSchema(admin, schema) {
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}_example" CASCADE`);
}

const TEAM_LINE = /— team (\S+)/;
const WEB_LINE = /web: the dashboard is at (\S+) /;
const DONE_LINE = /web: the run is done/;
const CLAIM_LINE = /^\S+ (task-\d+) pending -> in_progress \((reviewer-\d+)\)$/;
const WORKER_LINE = /started worker (\d+) \(pid (\d+), process (\S+)\)/;
const ERROR_LINE = /^(?:\[[^\]]+\] )?\S+ (\S+) error ([A-Z_]+): /;
/** What a process of the example prints when it stops on an error. */
const FATAL_LINE = /(teamwire-example): ([A-Z_]+): /;
/** A commit request of `fix --approve`, as the CLI prints it. */
const REQUEST_LINE = /^approval (\S+): (\S+) wants to commit /;

/** The processes of one run, what they print, and the perturbations that hit them. */
class RunningTeam {
  constructor(options) {
    this.options = options;
    this.lines = [];
    this.watchers = new Set();
    this.claims = [];
    this.workers = new Map(); // pid -> { processId, child? , index }
    this.joined = [];
    this.requests = [];
    this.exit = undefined;
    this.stopped = new Set();
    this.errorCodes = new Map();
    this.teamId = undefined;
    this.dashboard = undefined;
    this.done = false;
    this.waitingStopped = false;
  }

  start() {
    const { args, cwd, env } = this.options;
    this.child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: { ...process.env, ...env, INIT_CWD: cwd },
      stdio: [this.options.answers ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    this.child.stdin?.on('error', () => {});
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => resolve({ code, signal }));
      this.child.on('error', (error) => resolve({ code: null, signal: null, error }));
    });
    this.read(this.child.stdout, '');
    this.read(this.child.stderr, '[stderr] ');
  }

  read(stream, prefix) {
    const rl = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
    rl.on('line', (line) => this.onLine(`${prefix}${line}`));
  }

  onLine(line) {
    this.lines.push(line);
    if (this.lines.length > 4000) this.lines.splice(0, 1000);
    let m = TEAM_LINE.exec(line);
    if (m && this.teamId === undefined) this.teamId = m[1];
    m = WEB_LINE.exec(line);
    if (m && this.dashboard === undefined) {
      const url = new URL(m[1]);
      this.dashboard = { base: `${url.origin}/`, token: url.searchParams.get('token') };
    }
    m = CLAIM_LINE.exec(line);
    if (m) this.claims.push({ taskId: m[1], member: m[2] });
    m = REQUEST_LINE.exec(line);
    if (m) this.requests.push({ id: m[1], member: m[2] });
    m = WORKER_LINE.exec(line);
    if (m) this.workers.set(Number(m[2]), { index: Number(m[1]), processId: m[3] });
    m = ERROR_LINE.exec(line.replace(/^\[stderr\] /, '')) ?? FATAL_LINE.exec(line);
    if (m) this.errorCodes.set(m[2], (this.errorCodes.get(m[2]) ?? 0) + 1);
    if (DONE_LINE.test(line)) this.done = true;
    for (const watcher of [...this.watchers]) watcher();
  }

  /** Resolves with `test()`'s first truthy value, or undefined once the run no longer waits. */
  until(test) {
    return new Promise((resolve) => {
      const look = () => {
        const value = this.waitingStopped ? null : test();
        if (value || this.waitingStopped) {
          this.watchers.delete(look);
          resolve(value || undefined);
        }
      };
      this.watchers.add(look);
      look();
    });
  }

  stopWaiting() {
    this.waitingStopped = true;
    for (const watcher of [...this.watchers]) watcher();
  }

  /** Waits for the run to end: the dashboard says it is done (then SIGINT), or the process exits. */
  async finish(timeoutMs) {
    const problems = [];
    let timer;
    const timedOut = new Promise((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const outcome = await Promise.race([
      this.until(() => this.done).then(() => 'done'),
      this.exited.then(() => 'exited'),
      timedOut,
    ]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      problems.push(
        `the team did not finish within ${timeoutMs / 1000} s (stalled or spinning): ${this.progressLine()}`,
      );
      this.killAll();
    } else if (outcome === 'done') {
      this.child.kill('SIGINT');
    }
    let exitTimer;
    const exit = await Promise.race([
      this.exited,
      new Promise((resolve) => {
        exitTimer = setTimeout(() => resolve(undefined), EXIT_GRACE_MS);
      }),
    ]);
    clearTimeout(exitTimer);
    this.exit = outcome === 'timeout' ? undefined : exit;
    if (exit === undefined) {
      problems.push(`the main process did not exit within ${EXIT_GRACE_MS / 1000} s of SIGINT`);
      this.killAll();
      await this.exited;
    } else if (this.options.answers) {
      // `fix --approve` may end in exit 1 for the folders refused for good: checkExit judges it
      // against the decisions the log holds
    } else if (outcome !== 'timeout' && exit.code !== 0) {
      const why = this.lines.find((l) => /^ {2}why: /.test(l))?.trim();
      problems.push(
        `the main process exited with ${exit.signal ?? `code ${exit.code}`}${why ? ` (${why})` : ''}`,
      );
    }
    // a joined worker exits by itself once the review is done (the report written, every
    // reviewer retired); one still there is stopped
    for (const w of this.joined) {
      let t;
      const gone = await Promise.race([
        w.exited.then(() => true),
        new Promise((resolve) => {
          t = setTimeout(() => resolve(false), JOINED_GRACE_MS);
        }),
      ]);
      clearTimeout(t);
      if (!gone && outcome !== 'timeout') {
        problems.push(`the joined worker ${w.processId} did not exit once the review was done`);
      }
    }
    return { problems };
  }

  progressLine() {
    const last = this.lines.filter((l) => !l.startsWith('[stderr]')).slice(-1)[0];
    return `last line: ${last ?? '(none)'}`;
  }

  killAll() {
    for (const pid of this.stopped) signal(pid, 'SIGCONT');
    for (const pid of this.workers.keys()) signal(pid, 'SIGKILL');
    for (const w of this.joined) w.child.kill('SIGKILL');
    this.child.kill('SIGKILL');
  }

  async cleanUp() {
    for (const pid of this.stopped) signal(pid, 'SIGCONT');
    this.stopped.clear();
    for (const w of this.joined) {
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await w.exited;
    }
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }

  /** An action of the dashboard (as the person at the page). */
  async act(action, body) {
    const { base, token } = this.dashboard;
    const res = await fetch(`${base}api/actions/${action}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-teamwire-token': token },
      body: JSON.stringify(body),
    });
    const answer = await res.json().catch(() => ({}));
    return { status: res.status, answer };
  }

  /**
   * Applies one perturbation when its moment comes; resolves with what it did (`done`: it hit the
   * team; `note`: what happened; `members`: the members of a worker it hit).
   */
  async perturb(p) {
    if (p.kind === 'approvals') return this.answerApprovals(p);
    if (p.kind === 'limit' && p.extraFolders !== undefined) {
      // the fix job: more folders than member slots is the perturbation, nothing to do at run time
      return { done: true, note: `${p.extraFolders} folder(s) more than member slots` };
    }
    const ready = await this.until(
      () =>
        this.teamId !== undefined &&
        this.dashboard !== undefined &&
        (this.options.schema === undefined || this.workers.size > 0),
    );
    if (!ready) return { done: false, note: 'the run ended before the team was up' };
    let claimer;
    if (p.claim > 0) {
      const claim = await this.until(() => this.claims[p.claim - 1]);
      if (!claim) return { done: false, note: `the run ended before claim ${p.claim}` };
      claimer = claim.member;
    }
    if (p.delayMs > 0) await sleep(p.delayMs);
    if (this.ended()) return { done: false, note: 'the run ended first' };
    try {
      return await this.apply(p, claimer);
    } catch (error) {
      // the dashboard closes when the run ends: an action that raced the end did not happen
      if (this.ended() && error?.name === 'TypeError') {
        return { done: false, note: `the run ended first (${error.message})` };
      }
      throw error;
    }
  }

  /** The run is over, or about to be: its report is done, or its main process exited. */
  ended() {
    const exited = this.child.exitCode !== null || this.child.signalCode !== null;
    return this.waitingStopped || this.done || exited;
  }

  async apply(p, claimer) {
    switch (p.kind) {
      case 'interrupt': {
        const target = p.lead ? 'lead' : claimer;
        const r = await this.act('interrupt', { target });
        return {
          done: r.answer?.interrupted === true,
          note: `interrupt ${target}: ${r.status} ${JSON.stringify(r.answer)}`,
        };
      }
      case 'shutdown': {
        const r = await this.act('shutdown', {
          target: claimer,
          reason: 'The operator stops this reviewer.',
        });
        return { done: r.status === 200, note: `shutdown ${claimer}: ${r.status}` };
      }
      case 'message': {
        const to = p.lead ? 'lead' : claimer;
        const r = await this.act('message', { to, text: p.text });
        return { done: r.status === 200, note: `message to ${to}: ${r.status}`, to };
      }
      case 'task': {
        const description =
          p.folder === undefined
            ? 'Check that the team finished what it started; there is no folder to review.'
            : `Review the folder ${folderName(p.folder)} (path: ${folderName(p.folder)}) once more for the operator.`;
        const r = await this.act('task', { subject: p.subject, description });
        return { done: r.status === 200, note: `task: ${r.status} ${JSON.stringify(r.answer)}` };
      }
      case 'burst': {
        const filler = 'The operator adds context for the review. ';
        const texts = Array.from({ length: p.count }, (_, i) =>
          `Burst ${i + 1} of ${p.count}. ${filler.repeat(Math.ceil(p.size / filler.length))}`.slice(
            0,
            p.size,
          ),
        );
        const answers = await Promise.all(
          texts.map((text) => this.act('message', { to: claimer, text })),
        );
        const sent = answers.filter((a) => a.status === 200).length;
        return {
          done: sent > 0,
          sent,
          note: `burst to ${claimer}: ${sent}/${p.count} accepted (${answers.map((a) => a.status).join(',')})`,
        };
      }
      case 'limit': {
        // the operator joins before the lead has spawned every reviewer: it takes a slot
        const r = await this.act('message', { to: 'lead', text: 'The operator is here.' });
        return {
          done: true,
          note: `operator joins: ${r.status}${r.status === 200 ? '' : ` ${r.answer?.error?.code}`}`,
          joined: r.status === 200,
        };
      }
      case 'join':
        return this.join();
      case 'kill':
      case 'stop':
      case 'leave':
        return this.hitWorker(p, claimer);
      default:
        throw new Error(`unknown perturbation ${p.kind}`);
    }
  }

  /**
   * `fix --approve`: answers each commit request the CLI prints, on its stdin, with a decision
   * drawn from the plan's seed (approve; reject with a reason; or no answer, so that it expires),
   * after a short pause, until the run ends.
   */
  async answerApprovals(p) {
    const rng = createRng(p.answerSeed);
    const odds = p.expiresMs === undefined ? APPROVAL_ODDS.waiting : APPROVAL_ODDS.expiring;
    const typed = { approve: 0, reject: 0, none: 0 };
    for (let i = 0; ; i++) {
      const request = await this.until(() => this.requests[i]);
      if (!request) break;
      const roll = rng.next();
      const pauseMs = rng.int(0, 100);
      const choice =
        roll < odds.approve ? 'approve' : roll < odds.approve + odds.reject ? 'reject' : 'none';
      typed[choice]++;
      if (choice === 'none') continue;
      if (pauseMs > 0) await sleep(pauseMs);
      const line =
        choice === 'approve'
          ? `${request.id} y`
          : `${request.id} n the operator wants another look (${rng.int(1, 1e6)})`;
      if (this.child.stdin?.writable) this.child.stdin.write(`${line}\n`);
    }
    this.child.stdin?.end();
    return {
      done: this.requests.length > 0,
      note: `${this.requests.length} request(s): typed ${typed.approve} y, ${typed.reject} n, ${typed.none} left to expire`,
    };
  }

  /** A worker process joins the team, as on another machine. */
  join() {
    const processId = `joined-${this.joined.length + 1}-${randomBytes(4).toString('hex')}`;
    const args = ['worker', '--store', this.options.url, '--team', this.teamId];
    if (this.options.paceMs) args.push('--pace', String(this.options.paceMs));
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: this.options.cwd,
      env: {
        ...process.env,
        ...this.options.env,
        TEAMWIRE_EXAMPLE_PROCESS_ID: processId,
        // it stops when this process dies (its stdin closes)
        TEAMWIRE_EXAMPLE_WORKER_OF: String(process.pid),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.on('error', () => {});
    const exited = new Promise((resolve) =>
      child.on('close', (code, sig) => resolve({ code, sig })),
    );
    const worker = { processId, child, exited };
    this.joined.push(worker);
    this.workers.set(child.pid, { index: `j${this.joined.length}`, processId, joined: true });
    const tag = `[joined ${this.joined.length}] `;
    this.read(child.stdout, tag);
    this.read(child.stderr, `[stderr] ${tag}`);
    return { done: true, note: `worker ${processId} (pid ${child.pid}) joined` };
  }

  /** SIGKILL, SIGSTOP or SIGTERM of the worker process that runs `member` (as placed now). */
  async hitWorker(p, member) {
    const { admin, schema } = this.options;
    const placed = await admin.query(
      `SELECT pr.pid, pr.process_id, p.member_id
         FROM "${schema}".placements p
         JOIN "${schema}".processes pr ON pr.team_id = p.team_id AND pr.process_id = p.process_id
        WHERE p.team_id = $1`,
      [this.teamId],
    );
    const members = await memberNames(admin, schema, this.teamId);
    const row = placed.rows.find((r) => members.get(r.member_id) === member);
    if (row === undefined) return { done: false, note: `${member} is placed nowhere now` };
    const pid = Number(row.pid);
    if (!this.workers.has(pid) || this.stopped.has(pid)) {
      return { done: false, note: `${member} runs in ${row.process_id}, not a worker to hit` };
    }
    const on = placed.rows
      .filter((r) => r.process_id === row.process_id)
      .map((r) => members.get(r.member_id));
    const what = `${this.workers.get(pid).processId} (pid ${pid}), running ${on.join(', ')}`;
    if (p.kind === 'kill') {
      signal(pid, 'SIGKILL');
      this.workers.delete(pid);
      return { done: true, note: `SIGKILL ${what}`, members: on.length };
    }
    if (p.kind === 'leave') {
      signal(pid, 'SIGTERM');
      return { done: true, note: `SIGTERM ${what}`, members: on.length };
    }
    signal(pid, 'SIGSTOP');
    this.stopped.add(pid);
    setTimeout(() => {
      if (this.stopped.delete(pid)) signal(pid, 'SIGCONT');
    }, p.stopMs).unref();
    return { done: true, note: `SIGSTOP ${what} for ${p.stopMs} ms`, members: on.length };
  }
}

/** Member id -> name, from the member records of the team log. */
async function memberNames(admin, schema, teamId) {
  const rows = await admin.query(
    `SELECT record FROM "${schema}".team_log WHERE team_id = $1 AND record LIKE '%"type":"member"%'`,
    [teamId],
  );
  const names = new Map();
  for (const { record } of rows.rows) {
    const parsed = JSON.parse(record);
    if (parsed.type === 'member') names.set(parsed.member.id, parsed.member.name);
  }
  return names;
}

function signal(pid, sig) {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
