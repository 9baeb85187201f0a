import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../chat.js';
import { TeamError } from '../errors.js';
import type { ModelRequest, ModelStreamEvent } from '../ports/model.js';
import { createScriptedModel } from './scripted-model.js';

async function collect(stream: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const events: ModelStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

function request(agentName: string | undefined, messages: ChatMessage[] = []): ModelRequest {
  return {
    system: [{ text: 'sys', cacheable: true }],
    messages,
    tools: [],
    ...(agentName === undefined ? {} : { agentName }),
  };
}

describe('createScriptedModel', () => {
  it('answers each agent from its own script with deterministic tool-call ids', async () => {
    const model = createScriptedModel({
      scripts: {
        alice: [
          { text: 'hi', toolCalls: [{ name: 'a', input: { x: 1 } }, { name: 'b' }] },
          { toolCalls: [{ name: 'c' }] },
        ],
        bob: ({ call }) => ({ text: `bob ${call}` }),
      },
    });
    const first = await collect(model.stream(request('alice')));
    expect(first.map((e) => e.type)).toEqual([
      'text-delta',
      'tool-call-start',
      'tool-call-delta',
      'tool-call',
      'tool-call-start',
      'tool-call-delta',
      'tool-call',
      'finish',
    ]);
    const finish = first.at(-1);
    expect(finish).toMatchObject({
      type: 'finish',
      stopReason: 'tool_calls',
      message: {
        role: 'assistant',
        content: [{ type: 'text', text: 'hi' }],
        toolCalls: [
          { id: 'call-alice-1', name: 'a', input: { x: 1 } },
          { id: 'call-alice-2', name: 'b', input: {} },
        ],
      },
    });
    const second = await collect(model.stream(request('alice')));
    expect(second.at(-1)).toMatchObject({
      message: { toolCalls: [{ id: 'call-alice-3', name: 'c' }] },
    });
    expect((await collect(model.stream(request('bob')))).at(-1)).toMatchObject({
      stopReason: 'end_turn',
      message: { content: [{ type: 'text', text: 'bob 1' }], toolCalls: [] },
    });
    expect(model.calls('alice')).toBe(2);
    expect(model.remaining('alice')).toBe(0);
    expect(model.remaining('bob')).toBe(Number.POSITIVE_INFINITY);
  });

  it('records a deep copy of every request', async () => {
    const model = createScriptedModel({ scripts: { alice: [{ text: 'ok' }] } });
    const messages: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'one' }] }];
    await collect(model.stream(request('alice', messages)));
    messages.push({ role: 'user', content: [{ type: 'text', text: 'two' }] });
    expect(model.requests('alice')).toEqual([
      {
        system: [{ text: 'sys', cacheable: true }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'one' }] }],
        tools: [],
      },
    ]);
  });

  it('fails clearly when a script runs out or is missing', async () => {
    const model = createScriptedModel({ scripts: { alice: [{ text: 'only' }] } });
    await collect(model.stream(request('alice')));
    const outOfSteps = await collect(model.stream(request('alice'))).catch((e: unknown) => e);
    expect(TeamError.hasCode(outOfSteps, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((outOfSteps as Error).message).toBe(
      'scripted model: agent "alice" made call 2 but its script has only 1 step(s)',
    );
    await expect(collect(model.stream(request('carol')))).rejects.toThrow(
      'no script for agent "carol"',
    );
    await expect(collect(model.stream(request(undefined)))).rejects.toThrow('no agentName');
  });

  it('holds a gated step until released, ends it with ABORTED on abort, and throws scripted errors', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const model = createScriptedModel({
      scripts: {
        alice: [
          { text: 'held', gate },
          { text: 'held again', gate: new Promise(() => {}) },
        ],
        bob: [{ error: new TeamError('MODEL_RATE_LIMITED', 'slow down') }],
      },
    });
    const held = collect(model.stream(request('alice')));
    release();
    expect((await held).at(-1)).toMatchObject({ type: 'finish' });
    const controller = new AbortController();
    const aborted = collect(model.stream({ ...request('alice'), signal: controller.signal }));
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ code: 'ABORTED' });
    await expect(collect(model.stream(request('bob')))).rejects.toMatchObject({
      code: 'MODEL_RATE_LIMITED',
    });
  });
});
