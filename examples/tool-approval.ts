// A tool call that waits for a yes: ada's `deploy` needs approval, so ada parks until the host
// approves it (or rejects it: pass `reject` or set DEPLOY_DECISION=rejected); approved, it runs once.
// Run: pnpm --filter @teamwire/examples exec tsx tool-approval.ts [reject]
import { contentText, createAgentRegistry, defineTool, openTeam } from '@teamwire/core';
import {
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
} from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { z } from 'zod';

const decision =
  process.argv[2] === 'reject' || process.env.DEPLOY_DECISION === 'rejected'
    ? 'rejected'
    : 'approved';
const deploys: string[] = []; // what really ran
const deploy = defineTool({
  name: 'deploy',
  description: 'Deploy the current build to an environment.',
  inputSchema: z.object({ env: z.enum(['staging', 'production']), version: z.string() }),
  needsApproval: (input) => input.env === 'production', // staging needs no one's yes
  async execute({ env, version }) {
    deploys.push(`${version} to ${env}`);
    return `deployed ${version} to ${env}`;
  },
});

const teamId = 'tool-approval-1';
const model = createScriptedModel({
  scripts: {
    lead: ({ call }) =>
      call === 1
        ? {
            toolCalls: [
              {
                name: 'spawn_teammate',
                input: { name: 'ada', description: 'Release engineer', prompt: 'Ship 1.4.0.' },
              },
            ],
          }
        : { text: 'Noted.' },
    ada: ({ request }) => {
      const last = request.messages.at(-1);
      if (last?.role !== 'tool') {
        return {
          toolCalls: [{ name: 'deploy', input: { env: 'production', version: '1.4.0' } }],
        };
      }
      return { text: last.isError === true ? 'Not deployed; I will wait.' : 'Shipped 1.4.0.' };
    },
  },
});

const team = await openTeam({
  teamId,
  log: createMemoryTeamLog({ teamId }),
  transcripts: createMemoryTranscriptStore(),
  format: xmlFormat,
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead a release.', model },
    {
      type: 'engineer',
      systemPrompt: 'You release software.',
      model,
      tools: [deploy],
      // who says yes: 'host' (this program), 'lead' (the default) or a member's name
      approval: { approver: 'host', expiresInMs: 15 * 60_000 },
    },
  ]),
  lead: { agentType: 'lead' },
});
await team.promptLead('Get 1.4.0 to production.');
await team.idle(); // ada has asked and parked: no model call is open while she waits

for (const request of team.approvals({ status: 'pending' })) {
  console.log(`pending: ${request.requester} wants ${request.toolName} ${request.input}`);
  const decided = await team.decide({
    approvalId: request.id,
    decision,
    reason: decision === 'rejected' ? 'freeze until Monday' : 'go ahead',
  });
  console.log(`${decided.status} by the host`);
}
await team.idle(); // ada resumes: with deploy's result, or with the rejection as its result

const [done] = team.approvals({ status: ['approved', 'rejected'] });
console.log(`deploy ran ${deploys.length} time(s)${deploys.length > 0 ? `: ${deploys[0]}` : ''}`);
console.log(`approval ${done?.status}, started: ${done?.started === true}`);
const result = model
  .requests('ada')
  .at(-1)
  ?.messages.findLast((m) => m.role === 'tool');
console.log(`ada read: ${result === undefined ? '-' : contentText(result.content)}`);
console.log(`model calls: ada ${model.calls('ada')}`);
await team.dispose();
