// A team on a real LLM through @teamwire/host-adapters, the provider taken from the environment:
// TEAMWIRE_MODEL (openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:qwen3:8b, ...), else
// Anthropic if ANTHROPIC_API_KEY is set, else OpenAI (OPENAI_API_KEY); OPENAI_/ANTHROPIC_BASE_URL.
// Run: ANTHROPIC_API_KEY=... pnpm --filter @teamwire/examples exec tsx real-provider.ts
import { createAgentRegistry, openTeam } from '@teamwire/core';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '@teamwire/core/testing';
import { createModel } from '@teamwire/host-adapters';
import { xmlFormat } from '@teamwire/protocol';

const spec =
  process.env.TEAMWIRE_MODEL ??
  (process.env.ANTHROPIC_API_KEY ? 'anthropic:claude-sonnet-4-5' : 'openai:gpt-4.1-mini');
// The OpenAI-compatible providers read OPENAI_BASE_URL themselves; Anthropic's is passed here.
const anthropicBase = spec.startsWith('anthropic:') ? process.env.ANTHROPIC_BASE_URL : undefined;
const model = createModel(spec, { baseURL: anthropicBase }); // a missing key throws MODEL_AUTH now
console.log(`model: ${spec}`);

const teamId = 'real-1';
const team = await openTeam({
  teamId,
  // In memory for a first try; openJsonlTeamStore (see jsonl-resume.ts) keeps the team on disk.
  log: createMemoryTeamLog({ teamId }),
  transcripts: createMemoryTranscriptStore(),
  format: xmlFormat,
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead a small team. Be brief.', model, maxSteps: 12 },
    { type: 'poet', systemPrompt: 'You write short poems.', model, maxSteps: 6 },
  ]),
  lead: { agentType: 'lead' },
  events: {
    publish(agent, event) {
      if (event.type === 'tool.call') console.log(`${agent} calls ${event.toolCall.name}`);
      if (event.type === 'turn.end' && event.text) console.log(`${agent}: ${event.text}`);
    },
  },
});
const outcome = await team.promptLead(
  'Spawn one poet named "ada" to write a haiku about durable logs, wait for the team, then reply with the haiku.',
);
await team.idle();
console.log(`lead answered (${outcome.stopReason}, ${outcome.steps} steps)`);
await team.dispose();
