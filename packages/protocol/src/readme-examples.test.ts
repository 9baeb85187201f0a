import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  type ChatMessage,
  contentText,
  createAgentRegistry,
  openTeam,
  type TeamPolicy,
  type WireFormat,
} from '@teamwire/core';
import {
  createManualClock,
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
  createSequentialIds,
  type ScriptedModel,
  type ScriptedStepFunction,
} from '@teamwire/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { defineFormatConformance } from './testing/index.js';
import { xmlFormat } from './xml-format.js';

/*
 * The README's examples, taken from the README itself and run: each `ts` block named below is
 * written to a temporary module (its package imports pointed at this workspace) and imported.
 * Change the README and these tests run what it now says.
 */

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const workDir = mkdtempSync(join(tmpdir(), 'teamwire-protocol-readme-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

function coreEntry(subpath: '.' | './testing'): string {
  const dir = realpathSync(
    fileURLToPath(new URL('../node_modules/@teamwire/core', import.meta.url)),
  );
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return join(dir, manifest.exports[subpath].import);
}

/** The README's one `ts` code block that declares `name`, as a module of this workspace. */
async function readmeExample<T>(name: string): Promise<T> {
  const blocks = [...README.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string);
  const found = blocks.filter((code) => code.includes(`export const ${name}`));
  expect(found, `README blocks declaring ${name}`).toHaveLength(1);
  const code = (found[0] as string)
    .replaceAll("'@teamwire/core'", JSON.stringify(coreEntry('.')))
    .replaceAll(
      "'@teamwire/protocol'",
      JSON.stringify(fileURLToPath(new URL('./index.ts', import.meta.url))),
    );
  const file = join(workDir, `${name}.ts`);
  writeFileSync(file, code);
  const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  expect(module[name], `README example ${name}`).toBeDefined();
  return module[name] as T;
}

const assignmentsFirst = await readmeExample<TeamPolicy>('assignmentsFirst');
const prefixedJsonFormat = await readmeExample<WireFormat>('prefixedJsonFormat');
const oldestFirstPolicy = await readmeExample<TeamPolicy>('oldestFirstPolicy');

/** A team over memory stores with a scripted model; `bob` is a worker. */
async function openScriptedTeam(options: {
  format: WireFormat;
  policy?: TeamPolicy | undefined;
  bob: ScriptedStepFunction;
  idleClaim?: boolean;
}) {
  const teamId = 'team-readme';
  const model: ScriptedModel = createScriptedModel({
    scripts: { lead: () => ({ text: 'Noted.' }), bob: options.bob },
  });
  const transcripts = createMemoryTranscriptStore();
  const team = await openTeam({
    teamId,
    log: createMemoryTeamLog({ teamId }),
    transcripts,
    agents: createAgentRegistry([
      { type: 'lead', systemPrompt: 'You lead.', model },
      { type: 'worker', systemPrompt: 'You work.', model },
    ]),
    lead: { agentType: 'lead' },
    format: options.format,
    policy: options.policy,
    clock: createManualClock(),
    ids: createSequentialIds('id'),
    idleClaim: options.idleClaim ?? false,
  });
  const memberId = (name: string) =>
    team.listMembers(team.lead).find((m) => m.name === name)?.memberId as string;
  const transcript = (name: string) =>
    transcripts.raw(memberId(name)).map((entry) => entry.message);
  return { team, model, memberId, transcript };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('README: the team policy example (assignmentsFirst)', () => {
  /**
   * Bob's first model call is held open while the lead sends him a message, then reassigns him a
   * task (a `task_assignment`), then, with `shutdown`, asks him to stop. Returns the kinds of the
   * messages that started his later turns, in order.
   */
  async function run(policy: TeamPolicy | undefined, shutdown: boolean) {
    const started = deferred();
    const release = deferred();
    const h = await openScriptedTeam({
      format: xmlFormat,
      policy,
      bob: ({ call }) => {
        if (call > 1) return { text: `turn ${call}` };
        started.resolve();
        return { text: 'On it.', gate: release.promise };
      },
    });
    const { team } = h;
    await team.spawnTeammate(team.lead, {
      name: 'bob',
      description: 'helps',
      prompt: 'Start.',
      agentType: 'worker',
    });
    await started.promise;
    await team.sendMessage(team.lead, { to: 'bob', text: 'Also look at the docs.' });
    await team.createTask(team.lead, { subject: 'Fix the parser', description: 'It drops tabs.' });
    await team.updateTask(team.lead, {
      taskId: 'task-1',
      action: { type: 'reassign', ownerId: h.memberId('bob') },
    });
    if (shutdown) await team.shutdown(team.lead, { target: 'bob', reason: 'Enough.' });
    release.resolve();
    await team.idle();
    const turns = h.model
      .requests('bob')
      .slice(1)
      .map((request) => xmlFormat.parseEnvelope([request.messages.at(-1) as ChatMessage])?.kind);
    const bob = team.listMembers(team.lead).find((m) => m.name === 'bob');
    await team.dispose();
    return { turns, bob };
  }

  it('lets a task assignment overtake the lead message queued before it', async () => {
    expect((await run(assignmentsFirst, false)).turns).toEqual(['task_assignment', 'message']);
    // The same team without a policy runs the default order: the lead's mail FIFO.
    expect((await run(undefined, false)).turns).toEqual(['message', 'task_assignment']);
  });

  it('cannot hold back a shutdown request: the teammate retires without another turn', async () => {
    const { turns, bob } = await run(assignmentsFirst, true);
    expect(turns).toEqual([]);
    expect(bob).toMatchObject({ phase: 'retired', status: 'retired' });
  });
});

describe('README: a format and a policy written from the README plug into the runner', () => {
  defineFormatConformance(
    { describe, it },
    { name: 'README example (prefixed-json)', format: prefixedJsonFormat, numRuns: 250 },
  );

  it('runs a scripted team with prefixedJsonFormat and oldestFirstPolicy', async () => {
    let picks = 0;
    const policy: TeamPolicy = {
      ...oldestFirstPolicy,
      pickNext: (options) => {
        picks++;
        return oldestFirstPolicy.pickNext(options);
      },
    };
    const h = await openScriptedTeam({
      format: prefixedJsonFormat,
      policy,
      idleClaim: true,
      // First turn: no text (the lead gets the policy's fallback); then the claimed task.
      bob: ({ call }) => (call === 1 ? {} : { text: 'Tabs fixed.' }),
    });
    const { team, model } = h;
    await team.createTask(team.lead, { subject: 'Fix the parser', description: 'It drops tabs.' });
    await team.spawnTeammate(team.lead, {
      name: 'bob',
      description: 'Parser work.',
      prompt: 'Welcome.',
      agentType: 'worker',
    });
    await team.idle();

    const [first, second] = model.requests('bob');
    // The format frames the spawn prompt and explains itself in the team context.
    expect(contentText(first?.messages.at(-1)?.content ?? [])).toBe(
      'Team mail: {"type":"message","from":"lead","text":"Welcome."}',
    );
    expect(first?.system[1]?.text).toContain('Each message is a user message: Team mail: ');
    // The policy writes the claim prompt.
    expect(second?.messages.at(-1)).toMatchObject({
      role: 'user',
      source: { kind: 'task-claim', taskId: 'task-1' },
      content: [{ type: 'text', text: 'Work on task-1: Fix the parser\n\nIt drops tabs.' }],
    });
    // The lead reads bob's idle notice in the format, carrying the policy's text.
    const notices = h
      .transcript('lead')
      .map((message) => prefixedJsonFormat.parseEnvelope([message]))
      .filter((envelope) => envelope?.kind === 'idle_notification');
    expect(notices[0]).toEqual({
      from: 'bob',
      kind: 'idle_notification',
      text: 'bob has nothing to add.',
      color: 'blue',
    });
    expect(picks).toBeGreaterThan(0);
    await team.dispose();
  });
});
