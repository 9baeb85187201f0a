// What a seed gives: the team (its store, size, pace) and the perturbations that hit it, each with
// the moment it comes (the k-th task claim the run prints, then a delay) and its target. Every
// choice comes from the seed, so `--seed S` replays the same plan (the processes' timing still
// varies, so a replay is likely, not certain, to hit the same state).

import { createRng } from '../../../scripts/crash-support.mjs';

/** Every perturbation a run can meet. */
export const PERTURBATIONS = [
  'interrupt',
  'shutdown',
  'message',
  'task',
  'burst',
  'kill',
  'stop',
  'join',
  'leave',
  'limit',
  'approvals',
];

/** The perturbations a team in one process (JSONL store, dashboard) can meet. */
const SOLO = ['interrupt', 'shutdown', 'message', 'task', 'burst'];
/**
 * Those of a team spread over worker processes (PostgreSQL): the dashboard's actions too, as a
 * person would use them on such a team (the dashboard runs in the lead's process).
 */
const SPREAD = ['kill', 'stop', 'join', 'leave', 'message', 'task', 'shutdown', 'interrupt'];

/**
 * How often each perturbation leads a run (the second one is drawn evenly). A team spread over
 * processes costs about seven times the CPU of one in one process (three node processes and
 * their polling), so the perturbations only it can meet lead a little less often.
 */
const WEIGHTS = {
  interrupt: 1,
  shutdown: 1,
  message: 1,
  task: 1,
  burst: 1,
  kill: 0.6,
  stop: 0.6,
  join: 0.6,
  leave: 0.6,
  limit: 0.6,
  approvals: 0.6,
};

function pickWeighted(rng, weights) {
  const entries = Object.entries(weights);
  let roll = rng.next() * entries.reduce((n, [, w]) => n + w, 0);
  for (const [kind, w] of entries) {
    roll -= w;
    if (roll < 0) return kind;
  }
  return entries.at(-1)[0];
}

/** Milliseconds the offline model pauses before each answer, so perturbations land mid-turn. */
export const PACE_MS = 25;
/** The reviewers' context window in a team in one process: small, so a burst of mail passes it. */
export const SOLO_WINDOW_TOKENS = 6000;
/**
 * The lease of a process of a spread team (TEAMWIRE_EXAMPLE_LEASE_MS; the example's default is
 * 1 s): how soon a dead worker's reviewers move. Two seconds, so that a loaded CI machine starving
 * a process of CPU for a second does not fence it by itself; SIGSTOPs last one to three leases.
 */
export const LEASE_MS = 2000;
/**
 * `fix --approve`: how the harness answers each commit request (approve, reject with a reason,
 * or nothing, so that it expires); without `--approve-expires` every request is answered.
 */
export const APPROVAL_ODDS = {
  expiring: { approve: 0.5, reject: 0.3, none: 0.2 },
  waiting: { approve: 0.6, reject: 0.4, none: 0 },
};
/** The example's bound of refusals of one folder's commit (its reviewer then gives it up). */
export const MAX_COMMIT_REFUSALS = 3;

/** The example team's member limit (core's DEFAULT_TEAM_LIMITS.maxMembers; the app sets none). */
export const MEMBER_LIMIT = 8;

/**
 * The plan of run `seed`:
 * - `team`: `kind` (`solo`: one process on the JSONL store with the dashboard; `spread`: the lead
 *   in one process and `workers` worker processes on PostgreSQL; `fix`: `demo fix` on the JSONL
 *   store), `folders`, `teammates`, `workers`, `windowTokens`, `paceMs`;
 * - `perturbations`: `{ kind, claim, delayMs, ... }`, `claim` the 1-based task claim (as the run
 *   prints it) after which it comes, 0 for as soon as the team runs.
 * `key` names the team without its perturbations: runs with the same key share a baseline.
 */
export function planRun(seed) {
  const rng = createRng(seed);
  const primary = pickWeighted(rng, WEIGHTS);
  let team;
  const perturbations = [];
  if (primary === 'approvals') {
    // the fix job with --approve: every commit is asked for and answered at random from stdin
    team = { kind: 'fix', folders: rng.int(3, 4), teammates: 0, workers: 0 };
    perturbations.push({
      kind: 'approvals',
      claim: 0,
      delayMs: 0,
      // now and then a short expiry, so that some requests expire unanswered
      expiresMs: rng.chance(0.4) ? rng.int(300, 1500) : undefined,
      // the answers' own seed, drawn from the run's
      answerSeed: rng.int(1, 2 ** 30),
    });
  } else if (primary === 'limit') {
    // Either a review team at the limit that the operator joins first (its member takes the slot
    // of the last reviewer), or the fix job with more folders than the team has slots (the lead
    // spawns one fixer per folder).
    if (rng.chance(0.25)) {
      team = { kind: 'fix', folders: MEMBER_LIMIT + 1, teammates: 0, workers: 0 };
      perturbations.push({ kind: 'limit', claim: 0, delayMs: 0, extraFolders: 1 });
    } else {
      team = { kind: 'solo', folders: 3, teammates: MEMBER_LIMIT, workers: 0 };
      perturbations.push({ kind: 'limit', claim: 0, delayMs: 0 });
    }
  } else if (!SPREAD.includes(primary) || (SOLO.includes(primary) && rng.chance(0.85))) {
    team = { kind: 'solo', folders: rng.int(3, 4), teammates: rng.int(2, 3), workers: 0 };
    perturbations.push(perturbation(rng, primary, team));
  } else {
    // one shape (and so one baseline) for spread teams: they cost the most
    team = { kind: 'spread', folders: 4, teammates: 3, workers: 2 };
    perturbations.push(perturbation(rng, primary, team));
  }
  if (primary === 'join' && team.kind === 'spread' && rng.chance(0.4)) {
    // One worker of its own and one that joins; then the worker of the first reviewer to claim
    // after the join is killed: the team lives on in what the placement says, not in what the
    // main process started.
    team.workers = 1;
    perturbations[0].claim = 0;
    perturbations.push({ ...perturbation(rng, 'kill', team), claim: rng.int(2, team.folders) });
  } else if (team.kind !== 'fix' && rng.chance(0.5)) {
    // one worker process at most goes for good: a team whose every worker is gone has nobody to
    // run its reviewers (the README's limits)
    const removes = (k) => k === 'kill' || k === 'leave';
    const pool =
      team.kind === 'solo'
        ? SOLO
        : SPREAD.filter((k) => !(removes(k) && perturbations.some((p) => removes(p.kind))));
    perturbations.push(perturbation(rng, rng.pick(pool), team));
  }
  team.windowTokens = team.kind === 'solo' ? SOLO_WINDOW_TOKENS : undefined;
  team.paceMs = team.kind === 'fix' ? 0 : PACE_MS;
  // an approvals run's baseline is the same fix without --approve
  const key = `${team.kind}-f${team.folders}-t${team.teammates}-w${team.workers}`;
  return { seed, key, team, perturbations };
}

function perturbation(rng, kind, team) {
  const claim = rng.int(1, team.folders);
  const delayMs = rng.int(0, 4 * PACE_MS);
  switch (kind) {
    case 'interrupt':
      // the member that made that claim, now and then the lead instead
      return { kind, claim, delayMs, lead: rng.chance(0.2) };
    case 'message':
      return {
        kind,
        claim,
        delayMs,
        lead: rng.chance(0.5),
        text: `A note from the operator (${rng.int(1, 1e6)}): keep going.`,
      };
    case 'task': {
      const folder = rng.int(0, team.folders - 1);
      return {
        kind,
        claim,
        delayMs,
        // a task naming a folder is one more review of it; one naming none is not a review
        folder: rng.chance(0.5) ? folder : undefined,
        subject: `Operator check ${rng.int(1, 1e6)}`,
      };
    }
    case 'burst': {
      // legal messages (each far below the team's 64 KiB), together past the window
      const count = rng.int(4, 8);
      const windowBytes = SOLO_WINDOW_TOKENS * 4;
      const size = Math.ceil((windowBytes * (1.2 + rng.next())) / count);
      return { kind, claim, delayMs: 0, count, size };
    }
    case 'stop':
      return { kind, claim, delayMs, stopMs: rng.int(LEASE_MS, 3 * LEASE_MS) };
    case 'join':
      return { kind, claim: rng.int(0, team.folders), delayMs };
    default:
      // shutdown, kill, leave: of the member that made the claim, or of the worker running it
      return { kind, claim, delayMs };
  }
}

/** One line describing a plan, for the log of the run and its failure report. */
export function describePlan(plan) {
  const t = plan.team;
  const team =
    t.kind === 'fix'
      ? `fix of ${t.folders} folders`
      : `${t.kind} review of ${t.folders} folders, ${t.teammates} reviewers` +
        (t.kind === 'spread' ? `, ${t.workers} worker(s)` : '');
  const what = plan.perturbations.map((p) => {
    const when = p.claim === 0 ? 'at start' : `after claim ${p.claim} +${p.delayMs}ms`;
    const extra =
      p.kind === 'interrupt' && p.lead
        ? ' of the lead'
        : p.kind === 'message'
          ? p.lead
            ? ' to the lead'
            : ' to the claimer'
          : p.kind === 'burst'
            ? ` of ${p.count}x${p.size} B`
            : p.kind === 'stop'
              ? ` for ${p.stopMs}ms`
              : p.kind === 'approvals'
                ? p.expiresMs === undefined
                  ? ' answered at random'
                  : ` answered at random, expiring after ${p.expiresMs}ms`
                : p.kind === 'task' && p.folder !== undefined
                  ? ` naming a folder`
                  : '';
    return `${p.kind}${extra} ${when}`;
  });
  return `${team}: ${what.join(', ')}`;
}
