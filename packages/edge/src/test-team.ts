import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createAgentRegistry,
  createEventHub,
  type EventHub,
  openTeam,
  type TeamService,
} from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { OPERATOR_AGENT } from '@teamwire/dashboard';
import { createTokenIssuer, type TokenIssuer } from '@teamwire/mcp';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';

export const TEAM_ID = 'edge-team';
export const EXTERNAL_TYPE = 'coding-agent';

/** A team in a temporary JSONL folder: a scripted lead and the external member `alice`. */
export interface TestTeam {
  team: TeamService;
  log: Awaited<ReturnType<typeof openJsonlTeamStore>>['log'];
  hub: EventHub;
  tokens: TokenIssuer;
  /** A page folder as a build leaves it. */
  assetsDir: string;
  close(): Promise<void>;
}

export async function openTestTeam(): Promise<TestTeam> {
  const dir = await mkdtemp(join(tmpdir(), 'teamwire-edge-'));
  const assetsDir = join(dir, 'page');
  await mkdir(join(assetsDir, 'assets'), { recursive: true });
  await writeFile(join(assetsDir, 'index.html'), '<html><body>the page</body></html>');
  await writeFile(join(assetsDir, 'assets', 'index-a1.js'), 'console.log(1)');
  const store = await openJsonlTeamStore({ teamId: TEAM_ID, dir: join(dir, 'team'), create: true });
  const hub = createEventHub({ teamId: TEAM_ID, log: store.log });
  const team = await openTeam({
    teamId: TEAM_ID,
    log: store.log,
    transcripts: store.transcripts,
    format: xmlFormat,
    agents: createAgentRegistry([
      {
        type: 'lead',
        systemPrompt: 'You lead.',
        model: createScriptedModel({ scripts: { lead: [{ text: 'Noted.' }] } }),
      },
      { type: EXTERNAL_TYPE, description: 'A coding agent outside teamwire', external: true },
      OPERATOR_AGENT,
    ]),
    lead: { agentType: 'lead' },
    events: hub,
  });
  await team.spawnTeammate(team.lead, {
    name: 'alice',
    description: 'alice codes outside',
    prompt: 'Hi alice.',
    agentType: EXTERNAL_TYPE,
  });
  const tokens = createTokenIssuer({
    secret: 'a test secret that is long enough',
    teamId: TEAM_ID,
  });
  return {
    team,
    log: store.log,
    hub,
    tokens,
    assetsDir,
    async close() {
      await team.dispose();
      hub.close?.();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
