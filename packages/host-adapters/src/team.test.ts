import { type ChatMessage, contentText, createAgentRegistry, openTeam } from '@teamwire/core';
import {
  createManualClock,
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
  createSequentialIds,
  createSimpleFormat,
  type ScriptedStepFunction,
} from '@teamwire/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAiSdkModel } from './ai-sdk.js';
import { createOpenAICompatible } from './openai-compatible.js';
import { scriptedModelV4 } from './testing/ai-sdk-model.js';
import { openAiSse, readChunks } from './testing/fixtures.js';
import { type LoopbackServer, startLoopbackServer } from './testing/loopback-server.js';

let server: LoopbackServer;
beforeAll(async () => {
  server = await startLoopbackServer();
});
afterAll(async () => {
  await server.close();
});

const TEAM_ID = 'team-1';
const turn = (n: number) =>
  openAiSse(readChunks(`scenarios/openai-chat/team-turn-${n}.chunks.txt`));

/** True when the last assistant message of a request asked for tools (the turn goes on). */
function continuesTurn(messages: readonly ChatMessage[]): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === 'assistant') return message.toolCalls.length > 0;
  }
  return false;
}

describe('a team whose teammate runs on the OpenAI-compatible adapter', () => {
  it('drives a real teammate turn with team tools end to end over HTTP', async () => {
    server.reply({ body: [turn(1)] }, { body: [turn(2)] });
    const leadModel = createScriptedModel({
      scripts: {
        lead: (({ call, request }) => {
          if (call === 1) {
            return {
              toolCalls: [
                {
                  name: 'spawn_teammate',
                  input: {
                    name: 'researcher',
                    description: 'Looks things up and files tasks.',
                    prompt: 'File a task for the weather report and tell me when it exists.',
                    agentType: 'researcher',
                  },
                },
              ],
            };
          }
          return { text: continuesTurn(request.messages) ? 'Spawned.' : 'Noted.' };
        }) satisfies ScriptedStepFunction,
      },
    });
    const researcherModel = createOpenAICompatible({
      baseURL: server.baseURL,
      apiKey: 'sk-local',
      model: 'qwen3-8b',
      retry: false,
    });
    const transcripts = createMemoryTranscriptStore();
    const service = await openTeam({
      teamId: TEAM_ID,
      log: createMemoryTeamLog({ teamId: TEAM_ID }),
      transcripts,
      format: createSimpleFormat(),
      agents: createAgentRegistry([
        { type: 'lead', systemPrompt: 'You lead the team.', model: leadModel },
        { type: 'researcher', systemPrompt: 'You research carefully.', model: researcherModel },
      ]),
      lead: { agentType: 'lead' },
      clock: createManualClock(),
      ids: createSequentialIds('id'),
      idleClaim: false,
    });
    try {
      await service.promptLead('Get the research going.');
      await service.idle();

      const members = service.listMembers(service.lead);
      const researcher = members.find((m) => m.name === 'researcher');
      expect(researcher?.provider).toBe('openai-compatible:qwen3-8b');
      expect(researcher?.status).toBe('idle');

      // The model's tool calls really ran against the team.
      const tasks = service.listTasks(service.lead).tasks;
      expect(tasks.map((t) => [t.id, t.subject, t.description, t.creatorId])).toEqual([
        ['task-1', 'Write the report', 'Summarise the Zürich weather.', researcher?.memberId],
      ]);
      const leadSaw = leadModel
        .requests('lead')
        .flatMap((r) => r.messages)
        .map((m) => (m.role === 'user' ? contentText(m.content) : ''));
      expect(leadSaw).toContain('[message from researcher]\nCreated task-1 for the report ✅');

      // What went over the wire: the team tools, the prompt, then the tool results.
      expect(server.requests).toHaveLength(2);
      const [first, second] = server.requests;
      expect(first?.body.prompt_cache_key).toBe(`${TEAM_ID}:${researcher?.memberId}`);
      const toolNames = ((first?.body.tools ?? []) as { function: { name: string } }[]).map(
        (t) => t.function.name,
      );
      expect(toolNames).toEqual(expect.arrayContaining(['send_message', 'task_create']));
      const firstMessages = first?.body.messages as { role: string; content: string }[];
      expect(firstMessages[0]?.role).toBe('system');
      expect(firstMessages[0]?.content).toContain('You research carefully.');
      expect(firstMessages.at(-1)).toEqual({
        role: 'user',
        content:
          '[message from lead]\nFile a task for the weather report and tell me when it exists.',
      });
      const secondMessages = second?.body.messages as Record<string, unknown>[];
      const tail = secondMessages.slice(-3);
      expect(tail[0]).toEqual({
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_task',
            type: 'function',
            function: {
              name: 'task_create',
              arguments: JSON.stringify({
                subject: 'Write the report',
                description: 'Summarise the Zürich weather.',
              }),
            },
          },
          {
            id: 'call_msg',
            type: 'function',
            function: {
              name: 'send_message',
              arguments: JSON.stringify({
                to: 'lead',
                message: 'Created task-1 for the report ✅',
              }),
            },
          },
        ],
      });
      expect(tail.slice(1).map((m) => [m.role, m.tool_call_id])).toEqual([
        ['tool', 'call_task'],
        ['tool', 'call_msg'],
      ]);
      expect(String(tail[1]?.content)).toContain('task-1');

      // The transcript keeps what the adapter produced, usage included.
      const entries = transcripts.raw(researcher?.memberId ?? '');
      const assistants = entries.map((e) => e.message).filter((m) => m.role === 'assistant');
      expect(assistants.map((m) => [contentText(m.content), m.usage])).toEqual([
        ['', { inputTokens: 900, outputTokens: 64, cacheReadTokens: 768 }],
        [
          'Done: task-1 exists and the lead knows.',
          { inputTokens: 1010, outputTokens: 11, cacheReadTokens: 896 },
        ],
      ]);
      expect(assistants[0]?.content[0]).toEqual({
        type: 'thinking',
        thinking: 'The lead wants a task, then a note.',
      });
    } finally {
      await service.dispose();
    }
  });
});

describe('a team whose teammate runs on an AI SDK 7 (LanguageModelV4) model', () => {
  it('drives a teammate turn with team tools end to end over the V4 stream parts', async () => {
    const leadModel = createScriptedModel({
      scripts: {
        lead: (({ call, request }) => {
          if (call === 1) {
            return {
              toolCalls: [
                {
                  name: 'spawn_teammate',
                  input: {
                    name: 'researcher',
                    description: 'Looks things up and files tasks.',
                    prompt: 'File a task for the weather report and tell me when it exists.',
                    agentType: 'researcher',
                  },
                },
              ],
            };
          }
          return { text: continuesTurn(request.messages) ? 'Spawned.' : 'Noted.' };
        }) satisfies ScriptedStepFunction,
      },
    });
    const usage = (input: number, output: number, cacheRead: number) => ({
      inputTokens: { total: input, noCache: input - cacheRead, cacheRead, cacheWrite: 0 },
      outputTokens: { total: output, text: output, reasoning: 0 },
    });
    const { model, calls } = scriptedModelV4([
      [
        { type: 'stream-start', warnings: [] },
        { type: 'reasoning-start', id: 'r' },
        { type: 'reasoning-delta', id: 'r', delta: 'The lead wants a task, then a note.' },
        { type: 'reasoning-end', id: 'r' },
        { type: 'tool-input-start', id: 'call_task', toolName: 'task_create' },
        { type: 'tool-input-delta', id: 'call_task', delta: '{"subject":"Write the report",' },
        {
          type: 'tool-input-delta',
          id: 'call_task',
          delta: '"description":"Summarise the Zürich weather."}',
        },
        { type: 'tool-input-end', id: 'call_task' },
        {
          type: 'tool-call',
          toolCallId: 'call_task',
          toolName: 'task_create',
          input: '{"subject":"Write the report","description":"Summarise the Zürich weather."}',
        },
        {
          type: 'tool-call',
          toolCallId: 'call_msg',
          toolName: 'send_message',
          input: '{"to":"lead","message":"Created task-1 for the report ✅"}',
        },
        {
          type: 'finish',
          usage: usage(900, 64, 768),
          finishReason: { unified: 'tool-calls', raw: 'tool_use' },
        },
      ],
      [
        { type: 'ping' },
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: 'Done: task-1 exists and the lead knows.' },
        { type: 'text-end', id: 't' },
        {
          type: 'finish',
          usage: usage(1010, 11, 896),
          finishReason: { unified: 'stop', raw: 'end_turn' },
        },
      ],
    ]);
    const transcripts = createMemoryTranscriptStore();
    const service = await openTeam({
      teamId: TEAM_ID,
      log: createMemoryTeamLog({ teamId: TEAM_ID }),
      transcripts,
      format: createSimpleFormat(),
      agents: createAgentRegistry([
        { type: 'lead', systemPrompt: 'You lead the team.', model: leadModel },
        {
          type: 'researcher',
          systemPrompt: 'You research carefully.',
          model: createAiSdkModel(model, { retry: false }),
        },
      ]),
      lead: { agentType: 'lead' },
      clock: createManualClock(),
      ids: createSequentialIds('id'),
      idleClaim: false,
    });
    try {
      await service.promptLead('Get the research going.');
      await service.idle();

      const researcher = service.listMembers(service.lead).find((m) => m.name === 'researcher');
      expect(researcher?.provider).toBe('scripted-v4.chat:scripted-v4');
      expect(researcher?.status).toBe('idle');
      const tasks = service.listTasks(service.lead).tasks;
      expect(tasks.map((t) => [t.id, t.subject, t.creatorId])).toEqual([
        ['task-1', 'Write the report', researcher?.memberId],
      ]);
      const leadSaw = leadModel
        .requests('lead')
        .flatMap((r) => r.messages)
        .map((m) => (m.role === 'user' ? contentText(m.content) : ''));
      expect(leadSaw).toContain('[message from researcher]\nCreated task-1 for the report ✅');

      // What the V4 model was called with: the team tools, then the tool results.
      expect(calls).toHaveLength(2);
      const [first, second] = calls;
      expect(first?.providerOptions?.openai?.promptCacheKey).toBe(
        `${TEAM_ID}:${researcher?.memberId}`,
      );
      expect(first?.tools?.map((t) => t.name)).toEqual(
        expect.arrayContaining(['send_message', 'task_create']),
      );
      expect(first?.prompt[0]).toMatchObject({ role: 'system' });
      const tail = second?.prompt.slice(-3) ?? [];
      expect(tail.map((m) => m.role)).toEqual(['assistant', 'tool', 'tool']);
      expect(tail[0]?.content).toEqual([
        { type: 'reasoning', text: 'The lead wants a task, then a note.' },
        {
          type: 'tool-call',
          toolCallId: 'call_task',
          toolName: 'task_create',
          input: { subject: 'Write the report', description: 'Summarise the Zürich weather.' },
        },
        {
          type: 'tool-call',
          toolCallId: 'call_msg',
          toolName: 'send_message',
          input: { to: 'lead', message: 'Created task-1 for the report ✅' },
        },
      ]);
      expect(second?.prompt.filter((m) => m.role === 'tool').flatMap((m) => m.content)).toEqual([
        expect.objectContaining({ type: 'tool-result', toolCallId: 'call_task' }),
        expect.objectContaining({ type: 'tool-result', toolCallId: 'call_msg' }),
      ]);

      const entries = transcripts.raw(researcher?.memberId ?? '');
      const assistants = entries.map((e) => e.message).filter((m) => m.role === 'assistant');
      expect(assistants.map((m) => [contentText(m.content), m.usage])).toEqual([
        [
          '',
          {
            inputTokens: 900,
            outputTokens: 64,
            cacheReadTokens: 768,
            cacheWriteTokens: 0,
            reasoningTokens: 0,
          },
        ],
        [
          'Done: task-1 exists and the lead knows.',
          {
            inputTokens: 1010,
            outputTokens: 11,
            cacheReadTokens: 896,
            cacheWriteTokens: 0,
            reasoningTokens: 0,
          },
        ],
      ]);
      expect(assistants[0]?.content[0]).toEqual({
        type: 'thinking',
        thinking: 'The lead wants a task, then a note.',
      });
    } finally {
      await service.dispose();
    }
  });
});
