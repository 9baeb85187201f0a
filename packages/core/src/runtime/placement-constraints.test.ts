import { describe, expect, it } from 'vitest';
import { TeamError } from '../errors.js';
import type { WorkspaceProvider } from '../ports/workspace.js';
import { createManualClock, createSequentialIds } from '../testing/manual-clock.js';
import type { MemoryRuns, MemorySharedTeam } from '../testing/memory-shared.js';
import { createMemorySharedTeam } from '../testing/memory-shared.js';
import { createMemoryTranscriptStore } from '../testing/memory-stores.js';
import { createMemoryWorkspaces } from '../testing/memory-workspaces.js';
import type { AgentScript } from '../testing/scripted-model.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { createSimpleFormat, createSimplePolicy } from '../testing/simple-format.js';
import { createAgentRegistry } from './agents.js';
import { openTeam } from './open-team.js';
import type { TeamService } from './service-types.js';
import type { RecordingSink } from './test-harness.js';
import { createRecordingSink, notedLead, TEAM_ID } from './test-harness.js';

interface Process {
  service: TeamService;
  sink: RecordingSink;
  index: number;
}

function world(scripts: Record<string, AgentScript>) {
  const team: MemorySharedTeam = createMemorySharedTeam({ teamId: TEAM_ID });
  const transcripts = createMemoryTranscriptStore();
  const model = createScriptedModel({ scripts });
  return {
    team,
    async open(runs: MemoryRuns, ids: string, workspaces?: WorkspaceProvider): Promise<Process> {
      const participant = team.join({ runs });
      const sink = createRecordingSink();
      const service = await openTeam({
        teamId: TEAM_ID,
        log: participant.log,
        transcripts,
        format: createSimpleFormat(),
        policy: createSimplePolicy(),
        agents: createAgentRegistry([
          { type: 'lead', systemPrompt: 'You lead.', model },
          { type: 'fixer', systemPrompt: 'You fix.', model, isolation: 'worktree' },
          {
            type: 'trainer',
            systemPrompt: 'You train.',
            model,
            placement: { requires: ['label:gpu'] },
          },
        ]),
        lead: { agentType: 'lead' },
        events: sink,
        clock: createManualClock(),
        ids: createSequentialIds(ids),
        idleClaim: false,
        cwd: '/team',
        ...(workspaces === undefined ? {} : { workspaces }),
      });
      return { service, sink, index: participant.index };
    },
  };
}

describe('placement constraints in a team spread over processes', () => {
  it('runs a worktree member only on the process that opened its repository', async () => {
    const w = world({ lead: notedLead, carol: () => ({ text: 'reviewed' }) });
    // the lead's process runs every type, but the repository is not where it runs
    const elsewhere = createMemoryWorkspaces({ capability: 'repo:app', reachable: false });
    const a = await w.open({ lead: true }, 'a', elsewhere);
    const repo = createMemoryWorkspaces({ capability: 'repo:app' });
    const b = await w.open({ lead: false }, 'b', repo);
    await a.service.spawnTeammate(a.service.lead, {
      name: 'carol',
      description: 'fixes',
      prompt: 'Hi carol.',
      agentType: 'fixer',
    });
    await b.sink.waitFor((agent, e) => agent === 'carol' && e.type === 'turn.end');
    const carol = w.team.records().find((r) => r.type === 'member' && r.member.name === 'carol');
    const carolId = carol?.type === 'member' ? carol.member.id : '';
    expect(w.team.placementOf(carolId)?.participant).toBe(b.index);
    // her workspace was made where the repository is, by b's provider
    expect(repo.calls.map((c) => [c.method, c.member.name])).toEqual([['acquire', 'carol']]);
    expect(elsewhere.calls).toEqual([]);
    expect(a.sink.events.some((e) => e.agent === 'carol' && e.event.type === 'turn.start')).toBe(
      false,
    );
    await b.service.dispose();
    await a.service.dispose();
  });

  it('still refuses a worktree member when the provider names no capability', async () => {
    const w = world({ lead: notedLead });
    const a = await w.open({ lead: true }, 'a', createMemoryWorkspaces());
    const error = await a.service
      .spawnTeammate(a.service.lead, {
        name: 'carol',
        description: 'fixes',
        prompt: 'Hi carol.',
        agentType: 'fixer',
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(TeamError.hasCode(error, 'WORKSPACE_UNAVAILABLE')).toBe(true);
    await a.service.dispose();
  });

  it('shows a member no live process can host, with what it waits for', async () => {
    const w = world({ lead: notedLead, tina: () => ({ text: 'trained' }) });
    const a = await w.open({ lead: true }, 'a');
    await a.service.spawnTeammate(a.service.lead, {
      name: 'tina',
      description: 'trains',
      prompt: 'Hi tina.',
      agentType: 'trainer',
    });
    await a.service.idle();
    const progress = a.service.progress(a.service.lead);
    expect(progress.awaitingCapabilities).toEqual([{ name: 'tina', requires: ['label:gpu'] }]);
    expect(progress.progressing).toBe(false);
    expect(progress.summary).toContain('tina (it needs label:gpu)');
    // a process with the capability joins and takes her
    const gpu = await w.open({ lead: false, capabilities: ['label:gpu'] }, 'g');
    await gpu.sink.waitFor((agent, e) => agent === 'tina' && e.type === 'turn.end');
    expect(a.service.progress(a.service.lead).awaitingCapabilities).toEqual([]);
    await gpu.service.dispose();
    await a.service.dispose();
  });
});
