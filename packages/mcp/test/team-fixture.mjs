// The team the end-to-end tests serve: a JSONL team folder, a lead on the scripted model and an
// external agent type. Plain JavaScript over the built packages, so a child process can open it.
import { createAgentRegistry, openTeam } from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { openPostgresTeamStore } from '@teamwire/postgres';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';

export const TEAM_ID = 'mcp-e2e';
export const SECRET = 'a test secret that is long enough';
export const EXTERNAL_TYPE = 'coding-agent';

/** The task DAG the lead plans: 1 first, then 2 and 3, then 4. */
export const PLAN = [
  { subject: 'Design the format', description: 'Write down the record format.' },
  { subject: 'Write the parser', description: 'Parse the format.', blockedBy: ['task-1'] },
  { subject: 'Write the printer', description: 'Print the format.', blockedBy: ['task-1'] },
  {
    subject: 'Integrate',
    description: 'Round-trip parser and printer.',
    blockedBy: ['task-2', 'task-3'],
  },
];

/**
 * The lead: on its first turn it creates the plan and spawns `alice` and `bob` as external
 * members; afterwards it notes every report.
 */
export function leadScript({ call }) {
  if (call === 1) {
    return {
      toolCalls: [
        ...PLAN.map((task) => ({ name: 'task_create', input: task })),
        ...['alice', 'bob'].map((name) => ({
          name: 'spawn_teammate',
          input: {
            name,
            description: `${name} codes outside`,
            prompt: `Hi ${name}: take ready tasks from the board and report each one to me.`,
            agentType: EXTERNAL_TYPE,
          },
        })),
      ],
    };
  }
  if (call === 2) return { text: 'The team is on it.' };
  return { text: 'Noted.' };
}

/**
 * Opens the fixture team: in the JSONL folder `dir` (created when missing), or with `pg` in
 * PostgreSQL (`{url, schema, lead, leaseMs}`), as one process of a team spread over several.
 */
export async function openFixtureTeam({ dir, pg, externalMembers, externalLead = false }) {
  const store =
    pg === undefined
      ? await openJsonlTeamStore({ teamId: TEAM_ID, dir, create: true })
      : await openPostgresTeamStore({
          teamId: TEAM_ID,
          connectionString: pg.url,
          schema: pg.schema,
          runs: { lead: pg.lead, agentTypes: pg.lead ? 'all' : [] },
          leaseMs: pg.leaseMs,
          pollMs: 200,
        });
  const model = createScriptedModel({ scripts: { lead: leadScript } });
  const agents = createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead the team.', model },
    { type: EXTERNAL_TYPE, description: 'A coding agent outside teamwire', external: true },
    { type: 'client-lead', description: 'A lead in a client', external: true },
  ]);
  let team;
  try {
    team = await openTeam({
      teamId: TEAM_ID,
      log: store.log,
      transcripts: store.transcripts,
      format: xmlFormat,
      agents,
      lead: { agentType: externalLead ? 'client-lead' : 'lead' },
      idleClaim: false,
      ...(externalMembers === undefined ? {} : { externalMembers }),
    });
  } catch (error) {
    await store.close();
    throw error;
  }
  return {
    team,
    store,
    model,
    agentTypes: [EXTERNAL_TYPE],
    async close() {
      await team.dispose();
      await store.close();
    },
  };
}
