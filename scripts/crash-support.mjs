// Helpers of the crash tests' scripts (packages/storage/crash and packages/postgres/crash): a
// seeded PRNG for replayable runs and strict command-line parsing. Scripts only: no package
// publishes or imports this from its sources.

import { parseArgs as parseNodeArgs } from 'node:util';

/**
 * A small seeded PRNG (mulberry32): the same seed gives the same kill delays and the same
 * scripted choices, so a failing run can be replayed with its printed seed.
 */
export function createRng(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    /** An integer in [min, max]. */
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    /** One element of a non-empty array. */
    pick: (items) => items[Math.floor(next() * items.length)],
    chance: (p) => next() < p,
  };
}

/**
 * The context window (tokens) of the crash teams' members: small, so their transcripts outgrow it
 * within a few dozen turns and kills also land while members compact. Paired with core's
 * `deterministicSummary()` (no model call).
 */
export const CRASH_WINDOW_TOKENS = 5000;

/** A bad command line: `message` is one line saying what is wrong. */
export class UsageError extends Error {
  name = 'UsageError';
}

/**
 * Parses `--name value` and `--flag` arguments with node's own `parseArgs`, strictly: `options`
 * is its option config, e.g. `{ kills: { type: 'string' }, keep: { type: 'boolean' } }`, and an
 * unknown option, a missing value or a stray argument throws a `UsageError`. Values stay strings.
 * A `--` is skipped: it is what `pnpm run script -- --flag` passes along.
 */
export function parseArgs(argv, options) {
  const args = argv.filter((arg) => arg !== '--');
  try {
    return parseNodeArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    if (!String(error?.code).startsWith('ERR_PARSE_ARGS_')) throw error;
    throw new UsageError(explain(error, args, options));
  }
}

/**
 * The one-line reason for node's parse error. Node names the offending argument only in prose, so
 * the arguments are read again, leniently, as tokens to find it.
 */
function explain(error, args, options) {
  const { tokens } = parseNodeArgs({
    args,
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind === 'positional') return `unexpected argument ${JSON.stringify(token.value)}`;
    if (token.kind !== 'option') continue;
    const type = Object.hasOwn(options, token.name) ? options[token.name].type : undefined;
    if (type === undefined) {
      const known = Object.keys(options).map((name) => `--${name}`);
      return `unknown option ${token.rawName} (known: ${known.join(' ')})`;
    }
    if (type === 'boolean' && token.value !== undefined) {
      return `${token.rawName} takes no value (got ${args[token.index]})`;
    }
    // node takes a value that starts with a dash only when it is attached with `=`
    const value = token.value;
    if (
      type === 'string' &&
      (value === undefined || (!token.inlineValue && value.startsWith('-')))
    ) {
      return `${token.rawName} needs a value`;
    }
  }
  return error.message.split('\n')[0];
}

/**
 * The scripted team of a crash test: one model for every agent, two calls per turn. The first
 * does the turn's work (completes a claimed task, or in the drain every task the teammate has in
 * progress, then seeded random work unless `draining()`: a message, sometimes quiet, and a task
 * created, claimed with a sometimes stale revision, completed or released); the second ends the turn, so its step boundary delivers the mail that
 * came meanwhile. Tool-call ids carry the process, so a transcript that outlives many processes
 * keeps them unique, as a real provider's would be.
 *
 * `turns` maps an agent's name to its current turn (`{ step, reason, taskId }`, set at
 * `turn.start`); `team()` is the opened service (scripts run only once it exists: `ready`
 * resolves then); `createScriptedModel` is core's, passed in because this file sits outside the
 * packages. Returns the model and the roster helpers the host code shares with the scripts.
 */
export function createCrashTeamScripts({
  createScriptedModel,
  rng,
  team,
  turns,
  draining,
  ready = Promise.resolve(),
  description = 'Scripted work for the crash test.',
}) {
  const callTag = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  let callCount = 0;
  let counter = 0;
  const members = () => team().listMembers(team().lead);
  const activeNames = (except) =>
    members()
      .filter((m) => m.phase === 'active' && m.name !== except)
      .map((m) => m.name);
  const memberId = (name) => members().find((m) => m.name === name)?.memberId;

  /** The random (seeded) work of one turn: a message, and maybe a change on the board. */
  function work(agentName, isLead) {
    const service = team();
    const calls = [];
    const targets = activeNames(agentName);
    if (targets.length > 0 && rng.chance(isLead ? 0.5 : 0.9)) {
      const to = rng.pick(targets);
      calls.push({
        name: 'send_message',
        input: {
          to,
          message: `${agentName} to ${to}, note ${++counter}`,
          ...(rng.chance(0.2) ? { delivery: 'quiet' } : {}),
        },
      });
    }
    const roll = rng.next();
    if (roll < (isLead ? 0.1 : 0.15)) {
      const open = service.listTasks(service.lead, {
        status: ['pending', 'in_progress'],
        limit: 20,
      }).tasks;
      const blocker = open.length > 0 && rng.chance(0.3) ? [rng.pick(open).id] : [];
      calls.push({
        name: 'task_create',
        input: {
          subject: `job ${++counter} by ${agentName}`,
          description,
          ...(blocker.length > 0 ? { blockedBy: blocker } : {}),
        },
      });
    } else if (isLead) {
      // The lead only creates tasks.
    } else if (roll < 0.35) {
      const open = service.listTasks(service.lead, { ready: true, limit: 10 }).tasks;
      if (open.length > 0) {
        const task = rng.pick(open);
        // Sometimes a stale expected revision, so compare-and-set refusals happen too.
        const expectedRevision = rng.chance(0.2) ? Math.max(1, task.revision - 1) : task.revision;
        calls.push({
          name: 'task_update',
          input: { taskId: task.id, action: 'claim', expectedRevision },
        });
      }
    } else if (roll < 0.6) {
      const id = memberId(agentName);
      const mine = service.listTasks(service.lead, {
        ownerId: id,
        status: 'in_progress',
        limit: 5,
      }).tasks;
      if (mine.length > 0) {
        const action = roll < 0.55 ? 'complete' : 'release';
        calls.push({ name: 'task_update', input: { taskId: rng.pick(mine).id, action } });
      }
    }
    return calls;
  }

  /** One agent's script: two calls per turn, the first one does the work. */
  function script(agentName) {
    const isLead = agentName === 'lead';
    return async () => {
      await ready;
      const turn = turns.get(agentName) ?? { step: 0 };
      turn.step++;
      if (turn.step > 1) return { text: `${agentName} is done for now.` };
      const calls = [];
      if (turn.reason === 'task-claim' && turn.taskId !== undefined) {
        calls.push({ name: 'task_update', input: { taskId: turn.taskId, action: 'complete' } });
      } else if (draining() && !isLead) {
        // Tasks it claimed with its own tool call are resumed only when it is revived: in the
        // drain, any turn finishes them, so the team can end with every task completed.
        const service = team();
        const mine = service.listTasks(service.lead, {
          ownerId: memberId(agentName),
          status: 'in_progress',
          limit: 5,
        }).tasks;
        for (const task of mine) {
          calls.push({ name: 'task_update', input: { taskId: task.id, action: 'complete' } });
        }
      }
      if (!draining()) calls.push(...work(agentName, isLead));
      if (calls.length === 0) calls.push({ name: 'task_list', input: { limit: 1 } });
      return {
        toolCalls: calls.map((call) => ({ ...call, id: `call-${callTag}-${++callCount}` })),
      };
    };
  }

  // Usage counts prompt tokens from bytes, as a provider would, so context budgets measure.
  const scripted = createScriptedModel({ tokens: {} });
  const scriptedAgents = new Set();
  /** The scripted model, giving each agent its script the first time it calls. */
  const model = {
    specificationVersion: 'v1',
    provider: scripted.provider,
    modelId: scripted.modelId,
    stream(request) {
      const name = request.agentName;
      if (name !== undefined && !scriptedAgents.has(name)) {
        scriptedAgents.add(name);
        scripted.setScript(name, script(name));
      }
      return scripted.stream(request);
    },
  };
  return { model, members, activeNames, memberId, nextNote: () => ++counter };
}
