// A member whose turns an MCP client takes (Claude Code, Cursor, your own agent): the team is
// served over Streamable HTTP and, here, the official SDK client plays alice: it reads its mail,
// does the task, reports to the lead and acknowledges.
// Run: pnpm --filter @teamwire/examples exec tsx external-mcp-member.ts
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { contentText, createAgentRegistry, openTeam } from '@teamwire/core';
import {
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
} from '@teamwire/core/testing';
import { startTeamEdge } from '@teamwire/edge';
import { clientConfig, createTokenIssuer, generateSecret } from '@teamwire/mcp';
import { xmlFormat } from '@teamwire/protocol';

const teamId = 'mcp-1';
const model = createScriptedModel({ scripts: { lead: () => ({ text: 'Thanks, alice.' }) } });
const team = await openTeam({
  teamId,
  log: createMemoryTeamLog({ teamId }),
  transcripts: createMemoryTranscriptStore(),
  format: xmlFormat,
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead a small engineering team.', model },
    { type: 'coding-agent', description: 'Claude Code, Cursor, ...', external: true },
  ]),
  lead: { agentType: 'lead' },
});
// The host spawns alice here; a lead model would call spawn_teammate with the same input.
const prompt = 'Take task-1, then tell me.';
await team.spawnTeammate(team.lead, {
  name: 'alice',
  description: 'Coder',
  prompt,
  agentType: 'coding-agent',
});
await team.createTask(team.lead, { subject: 'Parser', description: 'Write the parser.' });

const tokens = createTokenIssuer({ secret: generateSecret(), teamId }); // keep the secret to keep tokens
// MCP on the team's HTTP edge (127.0.0.1, any free port); no dashboard here
const http = await startTeamEdge({ team, dashboard: false, mcp: { tokens } });
const token = tokens.tokenFor('alice');
console.log(clientConfig({ name: 'teamwire-alice', url: http.mcpUrl, token }).claudeCode);

// What a coding agent does with those tools, written out with the SDK's client.
const client = new Client({ name: 'alice', version: '1.0.0' });
const headers = { Authorization: `Bearer ${token}` };
await client.connect(
  new StreamableHTTPClientTransport(new URL(http.mcpUrl), { requestInit: { headers } }),
);
// biome-ignore lint/suspicious/noExplicitAny: a tool's structured result, as JSON
async function call(name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}
const inbox = await call('read_inbox');
for (const m of inbox.messages) console.log(`alice read ${m.kind} from ${m.from}: ${m.text}`);
await call('task_update', { taskId: 'task-1', action: 'claim' });
await call('task_update', { taskId: 'task-1', action: 'complete' });
await call('send_message', { to: 'lead', message: 'task-1 is done.' });
await call('ack_inbox', { cursor: inbox.cursor }); // handled: never shown again
console.log(`alice's inbox after the ack: ${(await call('read_inbox')).messages.length} messages`);

await team.idle(); // the lead's model has taken alice's mail
const leadRead = model.requests('lead').at(-1)?.messages.at(-1);
console.log(`lead read: ${leadRead?.role === 'user' ? contentText(leadRead.content) : '?'}`);
console.log(`task-1: ${team.getTask(team.lead, { taskId: 'task-1' }).status}`);
await client.close();
await http.close();
await team.dispose();
