// Two teams in two processes, one reaching the other over A2A, offline: this process runs team A,
// whose lead spawns "reviewer", a remote A2A agent; the forked process (this file, role "b") serves
// team B as that agent on its edge. B's lead answers; the answer comes back to A's lead as mail.
// Run: pnpm --filter @teamwire/examples exec tsx a2a-two-teams.ts
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as a2a from '@teamwire/a2a';
import { type AnyAgentDefinition, createAgentRegistry, openTeam } from '@teamwire/core';
import { createScriptedModel, type ScriptedStepFunction } from '@teamwire/core/testing';
import { startTeamEdge } from '@teamwire/edge';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';

const role = process.argv[2] ?? 'a';
const teamId = `team-${role}`;
const dir = await mkdtemp(join(tmpdir(), `teamwire-a2a-${role}-`));
const store = await openJsonlTeamStore({ teamId, dir, create: true });
async function open(lead: ScriptedStepFunction, other: AnyAgentDefinition) {
  const model = createScriptedModel({ scripts: { lead } });
  const leadType = [
    { type: 'lead', description: `The lead of ${teamId}`, systemPrompt: '', model },
  ];
  const agents = createAgentRegistry([...leadType, other]);
  const team = await openTeam({
    ...store,
    teamId,
    format: xmlFormat,
    agents,
    lead: { agentType: 'lead' },
  });
  return { agents, team };
}

if (role === 'b') {
  // team B: its lead answers each A2A request with a review, as mail to the member "a2a"
  const answer = { to: 'a2a', message: 'Reviewed: ship it.' };
  const { agents, team } = await open(
    ({ request }) =>
      request.messages.at(-1)?.role === 'tool'
        ? { text: 'Answered.' }
        : { toolCalls: [{ name: 'send_message', input: answer }] },
    a2a.A2A_CLIENT_AGENT,
  );
  const tasks = await a2a.openJsonlA2ATaskStore(dir); // A2A tasks kept next to the team's log
  const server = a2a.createA2AServer({ team, agents, store: tasks, log: store.log });
  await server.start();
  const edge = await startTeamEdge({
    team,
    dashboard: false,
    mounts: [
      { path: a2a.AGENT_CARD_PATH, access: 'public', fetch: server.fetchCard },
      { path: a2a.A2A_PATH, jsonRpc: true, fetch: server.fetch },
    ],
  });
  process.send?.({ cardUrl: `${edge.origin}${a2a.AGENT_CARD_PATH}`, token: edge.token });
  await once(process, 'disconnect'); // team A is done
  await edge.close();
  server.close();
  await team.dispose();
  await tasks.close();
} else {
  const child = fork(new URL(import.meta.url).pathname, ['b'], { execArgv: ['--import', 'tsx'] });
  const [{ cardUrl, token }] = (await once(child, 'message')) as [
    { cardUrl: string; token: string },
  ];
  // the token is the bridge's alone: no model, mail or transcript of team A sees it
  const reviewer = { type: 'team-b', cardUrl, headers: { authorization: `Bearer ${token}` } };
  const spawn = {
    name: 'reviewer',
    description: 'Team B',
    prompt: 'Ship on Friday?',
    agentType: 'team-b',
  };
  const { team } = await open(
    ({ call }) =>
      call === 1 ? { toolCalls: [{ name: 'spawn_teammate', input: spawn }] } : { text: 'Thanks.' },
    a2a.remoteAgentType(reviewer),
  );
  const bridge = a2a.startA2ABridge({ team, agents: [reviewer], log: store.log });
  await team.promptLead('Get team B to review the plan.');
  await bridge.settled(); // the reviewer's mail went to team B and its answer came back
  await team.idle();
  for await (const record of store.log.read()) {
    if (record.type === 'message.queued' && record.message.summary?.startsWith('a2a-answer:')) {
      const text = record.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      console.log(`reviewer (team B over A2A): ${text.replace(/<[^>]*>\n?/g, '').trim()}`);
    }
  }
  await bridge.close();
  await team.dispose();
  child.disconnect();
  await once(child, 'exit');
}
await store.close();
