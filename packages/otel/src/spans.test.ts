import { SpanKind } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { createAgentRegistry, openTeam, type TeamService } from '@teamwire/core';
import {
  createManualClock,
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
  createSequentialIds,
  createSimpleFormat,
  createSimplePolicy,
  type MemoryTeamLog,
} from '@teamwire/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRIC } from './conventions.js';
import { createTeamTelemetry, type TeamTelemetry } from './telemetry.js';
import { aliceScript, childNames, leadScript, only, parentOf } from './test-helpers.js';

class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

interface Run {
  team: TeamService;
  log: MemoryTeamLog;
  exporter: InMemorySpanExporter;
  reader: TestReader;
  telemetry: TeamTelemetry;
}

const opened: TeamService[] = [];
afterEach(async () => {
  for (const team of opened.splice(0)) await team.dispose();
});

async function exchange(captureContent = false): Promise<Run> {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const telemetry = createTeamTelemetry({
    tracer: tracerProvider.getTracer('test'),
    meter: meterProvider.getMeter('test'),
    captureContent,
  });
  const log = createMemoryTeamLog({ teamId: 'team-1' });
  const model = createScriptedModel({
    scripts: { lead: leadScript, alice: aliceScript },
    modelId: 'scripted-7',
  });
  const team = await openTeam({
    teamId: 'team-1',
    log,
    transcripts: createMemoryTranscriptStore(),
    format: createSimpleFormat(),
    policy: createSimplePolicy(),
    agents: createAgentRegistry([
      { type: 'lead', systemPrompt: 'You lead.', model },
      { type: 'worker', systemPrompt: 'You work.', model },
    ]),
    lead: { agentType: 'lead' },
    events: telemetry.events,
    traceContext: telemetry.traceContext,
    clock: createManualClock(),
    ids: createSequentialIds('id'),
    idleClaim: false,
  });
  opened.push(team);
  telemetry.attach(team);
  await team.promptLead('Find out how many files there are.');
  await team.idle();
  return { team, log, exporter, reader, telemetry };
}

describe('spans of a two-member exchange', () => {
  it('builds one trace: the lead’s request, alice’s turn under it, and the lead’s turn on her answer', async () => {
    const { exporter, log } = await exchange();
    const spans = exporter.getFinishedSpans();

    const leadFirst = only(
      spans,
      'invoke_agent lead',
      (s) => s.attributes[ATTR.turnReason] === 'host',
    );
    expect(parentOf(leadFirst)).toBeUndefined();
    expect(leadFirst.kind).toBe(SpanKind.INTERNAL);
    expect(leadFirst.attributes).toMatchObject({
      [ATTR.operation]: 'invoke_agent',
      [ATTR.agentName]: 'lead',
      [ATTR.agentId]: 'team-1',
      [ATTR.member]: 'lead',
      [ATTR.team]: 'team-1',
      [ATTR.provider]: 'scripted',
      [ATTR.requestModel]: 'scripted-7',
      [ATTR.stopReason]: 'end_turn',
      [ATTR.turnSteps]: 2,
    });
    expect(childNames(spans, leadFirst)).toEqual([
      'chat scripted-7',
      'chat scripted-7',
      'execute_tool spawn_teammate',
    ]);
    const spawn = only(spans, 'execute_tool spawn_teammate');
    expect(spawn.attributes).toMatchObject({
      [ATTR.operation]: 'execute_tool',
      [ATTR.toolName]: 'spawn_teammate',
      [ATTR.toolType]: 'function',
      [ATTR.agentName]: 'lead',
    });
    const leadChats = spans.filter(
      (s) => s.name === 'chat scripted-7' && parentOf(s) === leadFirst.spanContext().spanId,
    );
    expect(leadChats.map((s) => s.kind)).toEqual([SpanKind.CLIENT, SpanKind.CLIENT]);
    expect(leadChats.map((s) => s.attributes[ATTR.finishReasons])).toEqual([
      ['tool_calls'],
      ['stop'],
    ]);
    expect(leadChats[0]?.attributes).toMatchObject({
      [ATTR.operation]: 'chat',
      [ATTR.requestModel]: 'scripted-7',
      [ATTR.provider]: 'scripted',
      [ATTR.inputTokens]: 100,
      [ATTR.outputTokens]: 10,
    });

    // alice's turn was started by the lead's spawn prompt: a child of the spawn call, linked to it
    const alice = only(spans, 'invoke_agent alice');
    expect(alice.spanContext().traceId).toBe(leadFirst.spanContext().traceId);
    expect(parentOf(alice)).toBe(spawn.spanContext().spanId);
    expect(alice.links.map((l) => l.context.spanId)).toEqual([spawn.spanContext().spanId]);
    const prompt = log
      .records()
      .find((r) => r.type === 'message.queued' && r.message.targetId !== 'team-1');
    expect(prompt?.type === 'message.queued' && prompt.message.trace?.traceparent).toBe(
      `00-${spawn.spanContext().traceId}-${spawn.spanContext().spanId}-01`,
    );
    expect(prompt?.schemaVersion).toBe(3);
    expect(alice.attributes).toMatchObject({
      [ATTR.agentName]: 'alice',
      [ATTR.turnReason]: 'message',
      [ATTR.messageKind]: 'message',
      [ATTR.requestModel]: 'scripted-7',
      [ATTR.team]: 'team-1',
    });
    // her idle notice is queued before her turn ends: the lead's turn on it is a child of hers
    expect(childNames(spans, alice)).toEqual([
      'chat scripted-7',
      'chat scripted-7',
      'execute_tool send_message',
      'invoke_agent lead',
    ]);
    const idle = only(
      spans,
      'invoke_agent lead',
      (s) => parentOf(s) === alice.spanContext().spanId,
    );
    expect(idle.attributes[ATTR.messageKind]).toBe('idle_notification');
    const send = only(spans, 'execute_tool send_message');
    const aliceChats = spans.filter(
      (s) => s.name === 'chat scripted-7' && parentOf(s) === alice.spanContext().spanId,
    );
    expect(aliceChats.map((s) => s.attributes[ATTR.finishReasons])).toEqual([
      ['tool_calls'],
      ['stop'],
    ]);
    expect(aliceChats.map((s) => s.attributes[ATTR.inputTokens])).toEqual([50, 60]);

    // the lead's turn on alice's answer: a child of her send_message call, in the same trace
    const answer = only(
      spans,
      'invoke_agent lead',
      (s) =>
        s.attributes[ATTR.turnReason] === 'message' && parentOf(s) === send.spanContext().spanId,
    );
    expect(answer.spanContext().traceId).toBe(leadFirst.spanContext().traceId);
    expect(answer.links.map((l) => l.attributes?.[ATTR.messageId])).toEqual([
      answer.attributes[ATTR.messageId],
    ]);
    // every span of the exchange is in the one trace
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
  });

  it('keeps prompt and message text out of attributes unless asked', async () => {
    const off = (await exchange()).exporter.getFinishedSpans();
    const keys = new Set(off.flatMap((s) => Object.keys(s.attributes)));
    expect(keys.has(ATTR.toolArguments)).toBe(false);
    expect(keys.has(ATTR.toolResult)).toBe(false);
    expect(keys.has(ATTR.outputMessages)).toBe(false);
    for (const span of off) {
      expect(JSON.stringify(span.attributes)).not.toContain('42 files');
    }

    const on = (await exchange(true)).exporter.getFinishedSpans();
    const send = only(on, 'execute_tool send_message');
    expect(JSON.parse(String(send.attributes[ATTR.toolArguments]))).toEqual({
      to: 'lead',
      message: 'There are 42 files.',
    });
    expect(send.attributes[ATTR.toolResult]).toContain('messageId');
    const alice = only(on, 'invoke_agent alice');
    expect(JSON.parse(String(alice.attributes[ATTR.outputMessages]))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'alice 2' }] },
    ]);
  });

  it('records tokens by member and model, durations, delivery latency, pending mail and approvals', async () => {
    const { reader } = await exchange();
    const { resourceMetrics } = await reader.collect();
    const all = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
    const metric = (name: string) => {
      const found = all.find((m) => m.descriptor.name === name);
      if (found === undefined) throw new Error(`no metric ${name}`);
      return found;
    };
    const tokens = metric(METRIC.tokenUsage).dataPoints.map((p) => ({
      member: p.attributes[ATTR.member],
      model: p.attributes[ATTR.requestModel],
      type: p.attributes[ATTR.tokenType],
      sum: (p.value as { sum: number }).sum,
    }));
    expect(tokens).toContainEqual({
      member: 'alice',
      model: 'scripted-7',
      type: 'input',
      sum: 110,
    });
    expect(tokens).toContainEqual({
      member: 'alice',
      model: 'scripted-7',
      type: 'output',
      sum: 10,
    });
    const leadInput = tokens.find((t) => t.member === 'lead' && t.type === 'input');
    expect(leadInput?.sum).toBeGreaterThanOrEqual(220);
    const turns = metric(METRIC.turnDuration).dataPoints;
    const aliceTurns = turns.find((p) => p.attributes[ATTR.member] === 'alice');
    expect((aliceTurns?.value as { count: number } | undefined)?.count).toBe(1);
    const calls = metric(METRIC.operationDuration).dataPoints.find(
      (p) => p.attributes[ATTR.member] === 'alice',
    );
    expect((calls?.value as { count: number } | undefined)?.count).toBe(2);
    const latency = metric(METRIC.deliveryLatency).dataPoints;
    expect(latency.some((p) => p.attributes[ATTR.member] === 'alice')).toBe(true);
    expect(latency.some((p) => p.attributes[ATTR.member] === 'lead')).toBe(true);
    // everything was delivered: no member has mail pending, no approval waits
    expect(all.find((m) => m.descriptor.name === METRIC.pendingMail)?.dataPoints ?? []).toEqual([]);
    expect(metric(METRIC.approvalsWaiting).dataPoints.map((p) => p.value)).toEqual([0]);
  });
});
