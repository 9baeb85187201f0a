import { SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { AgentEvent, TeamRecord } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import { ATTR, METRIC } from './conventions.js';
import { createTeamTelemetry } from './telemetry.js';
import { only, parentOf } from './test-helpers.js';
import { fromMessageTrace, toMessageTrace } from './trace-context.js';

class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

function setup() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new TestReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter('test');
  let clock = 1_000_000;
  const telemetry = createTeamTelemetry({
    tracer: provider.getTracer('test'),
    meter,
    teamId: 'team-1',
    now: () => clock,
  });
  const publish = (name: string, event: AgentEvent, advanceMs = 10) => {
    clock += advanceMs;
    telemetry.events.publish(name, event);
  };
  return { exporter, reader, telemetry, publish };
}

const base = { at: 1, teamId: 'team-1' } as const;

/** The fields of the member record of `alice` (`m-alice`), naming `provider` when given. */
function aliceMember(provider: string | undefined): Record<string, unknown> {
  return {
    type: 'member',
    schemaVersion: 1,
    member: {
      id: 'm-alice',
      name: 'alice',
      description: '',
      agentType: 'worker',
      ...(provider === undefined ? {} : { provider }),
      context: 'fresh',
      phase: 'active',
    },
  };
}

describe('spans from events', () => {
  it('traces a compaction under the turn and counts it', async () => {
    const { exporter, reader, publish } = setup();
    publish('alice', { type: 'turn.start', reason: 'task-claim', taskId: 'task-3' });
    publish('alice', {
      type: 'context.compacting',
      reason: 'budget',
      tokensBefore: 9000,
      estimated: false,
    });
    publish('alice', {
      type: 'context.compacted',
      compactionId: 'c-1',
      reason: 'budget',
      tokensBefore: 9000,
      tokensAfter: 2000,
      estimated: false,
      replacedMessages: 12,
      retainedMessages: 1,
      durationMs: 30,
      policy: 'deterministic',
    });
    publish(
      'alice',
      { type: 'model.step', step: 1, usage: { inputTokens: 2000, outputTokens: 5 } },
      40,
    );
    publish('alice', { type: 'turn.end', stopReason: 'end_turn', steps: 1, text: '' });
    const spans = exporter.getFinishedSpans();
    const turn = only(spans, 'invoke_agent alice');
    expect(turn.attributes[ATTR.task]).toBe('task-3');
    const compaction = only(spans, 'compaction alice');
    expect(parentOf(compaction)).toBe(turn.spanContext().spanId);
    expect(compaction.attributes).toMatchObject({
      [ATTR.compactionReason]: 'budget',
      [ATTR.tokensBefore]: 9000,
      [ATTR.tokensAfter]: 2000,
      [ATTR.replacedMessages]: 12,
      [ATTR.compactionPolicy]: 'deterministic',
    });
    // the model call starts after the compaction ended: 40 ms, not the compaction's time too
    const chat = only(spans, 'chat');
    expect(chat.duration).toEqual([0, 40_000_000]);
    const { resourceMetrics } = await reader.collect();
    const counter = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === METRIC.compactions);
    expect(counter?.dataPoints.map((p) => [p.attributes[ATTR.member], p.value])).toEqual([
      ['alice', 1],
    ]);
  });

  it('marks a failed turn and a failed tool, and ends tools a turn left open', () => {
    const { exporter, publish } = setup();
    publish('bob', { type: 'turn.start', reason: 'host' });
    publish('bob', { type: 'model.step', step: 1, usage: { inputTokens: 1, outputTokens: 1 } });
    publish('bob', { type: 'tool.call', toolCall: { id: 't1', name: 'grep', input: {} } });
    publish('bob', {
      type: 'tool.result',
      toolCallId: 't1',
      toolName: 'grep',
      isError: true,
      text: 'x',
    });
    publish('bob', { type: 'tool.call', toolCall: { id: 't2', name: 'write', input: {} } });
    publish('bob', { type: 'error', code: 'MODEL_UNAVAILABLE', message: 'down' });
    publish('bob', { type: 'turn.end', stopReason: 'error', steps: 1, text: '' });
    const spans = exporter.getFinishedSpans();
    const turn = only(spans, 'invoke_agent bob');
    expect(turn.status.code).toBe(SpanStatusCode.ERROR);
    expect(turn.attributes[ATTR.errorType]).toBe('MODEL_UNAVAILABLE');
    expect(only(spans, 'execute_tool grep').attributes[ATTR.errorType]).toBe('tool_error');
    const cut = only(spans, 'execute_tool write');
    expect(cut.status.code).toBe(SpanStatusCode.ERROR);
    expect(cut.attributes[ATTR.errorType]).toBe('interrupted');
    expect(only(spans, 'chat').attributes[ATTR.finishReasons]).toEqual(['tool_calls']);
  });

  it('answers the trace context a member acts in: its tool call, its turn, then its last turn', () => {
    const { exporter, telemetry, publish } = setup();
    expect(telemetry.traceContext.current('carol')).toBeUndefined();
    publish('carol', { type: 'turn.start', reason: 'host' });
    const inTurn = telemetry.traceContext.current('carol');
    publish('carol', {
      type: 'tool.call',
      toolCall: { id: 't1', name: 'send_message', input: {} },
    });
    const inTool = telemetry.traceContext.current('carol');
    publish('carol', {
      type: 'tool.result',
      toolCallId: 't1',
      toolName: 'send_message',
      isError: false,
      text: '',
    });
    publish('carol', { type: 'turn.end', stopReason: 'end_turn', steps: 1, text: '' });
    const after = telemetry.traceContext.current('carol');
    const turn = only(exporter.getFinishedSpans(), 'invoke_agent carol');
    const tool = only(exporter.getFinishedSpans(), 'execute_tool send_message');
    expect(inTurn?.traceparent).toBe(
      `00-${turn.spanContext().traceId}-${turn.spanContext().spanId}-01`,
    );
    expect(inTool?.traceparent).toBe(
      `00-${tool.spanContext().traceId}-${tool.spanContext().spanId}-01`,
    );
    expect(after).toEqual(inTurn);
  });

  it('links a turn to mail spliced into it, and counts pending mail and waiting approvals', async () => {
    const { exporter, reader, publish } = setup();
    const sender = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const record = (r: Record<string, unknown>, seq: number) =>
      publish('alice', { type: 'record', record: { ...base, seq, ...r } as TeamRecord });
    record(aliceMember('openai:gpt-x'), 1);
    publish('alice', { type: 'turn.start', reason: 'host' });
    record(
      {
        type: 'message.queued',
        schemaVersion: 3,
        message: {
          id: 'msg-1',
          senderId: 'team-1',
          senderName: 'lead',
          targetId: 'm-alice',
          kind: 'message',
          delivery: 'quiet',
          content: [],
          trace: { traceparent: sender },
        },
      },
      2,
    );
    record(
      {
        type: 'message.queued',
        schemaVersion: 1,
        message: {
          id: 'msg-2',
          senderId: 'team-1',
          senderName: 'lead',
          targetId: 'm-alice',
          kind: 'message',
          delivery: 'quiet',
          content: [],
        },
      },
      3,
    );
    record(
      {
        type: 'approval.requested',
        schemaVersion: 3,
        approval: { id: 'ap-1', kind: 'plan', requesterId: 'm-alice', plan: 'p' },
      },
      4,
    );
    const gauges = async () => {
      const { resourceMetrics } = await reader.collect();
      const metrics = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
      const points = (name: string) =>
        metrics
          .find((m) => m.descriptor.name === name)
          ?.dataPoints.map((p) => [p.attributes[ATTR.member], p.value]) ?? [];
      return { pending: points(METRIC.pendingMail), approvals: points(METRIC.approvalsWaiting) };
    };
    expect(await gauges()).toEqual({ pending: [['alice', 2]], approvals: [[undefined, 1]] });
    record(
      { type: 'message.delivered', schemaVersion: 1, messageId: 'msg-1', targetId: 'm-alice' },
      5,
    );
    record(
      { type: 'approval.decided', schemaVersion: 3, approvalId: 'ap-1', decision: 'approved' },
      6,
    );
    publish('alice', { type: 'turn.end', stopReason: 'end_turn', steps: 0, text: '' });
    expect(await gauges()).toEqual({ pending: [['alice', 1]], approvals: [[undefined, 0]] });
    const turn = only(exporter.getFinishedSpans(), 'invoke_agent alice');
    expect(turn.links.map((l) => [l.context.spanId, l.attributes?.[ATTR.messageId]])).toEqual([
      ['b7ad6b7169203331', 'msg-1'],
    ]);
    expect(turn.attributes[ATTR.requestModel]).toBe('gpt-x');
    expect(turn.attributes[ATTR.provider]).toBe('openai');
  });

  it("gives each span and metric point the member's task and model as they are at the time", async () => {
    const { exporter, reader, publish } = setup();
    const record = (r: Record<string, unknown>, seq: number) =>
      publish('alice', { type: 'record', record: { ...base, seq, ...r } as TeamRecord });
    const member = (provider: string | undefined, seq: number) =>
      record(aliceMember(provider), seq);
    const task = (status: string, seq: number) =>
      record(
        {
          type: 'task',
          schemaVersion: 1,
          task: {
            id: 'task-1',
            revision: seq,
            subject: 's',
            description: 'd',
            status,
            creatorId: 'm-alice',
            ownerId: 'm-alice',
            blockedBy: [],
            writeScopes: [],
          },
        },
        seq,
      );
    const step = () =>
      publish('alice', { type: 'model.step', step: 1, usage: { inputTokens: 3, outputTokens: 1 } });
    const tool = (id: string) =>
      publish('alice', {
        type: 'tool.call',
        toolCall: { id, name: 'read', input: {} },
      } as AgentEvent);
    member(undefined, 1);
    publish('alice', { type: 'turn.start', reason: 'host' });
    step();
    tool('call-1');
    task('in_progress', 2);
    member('openai:gpt-x', 3);
    step();
    tool('call-2');
    task('completed', 4);
    tool('call-3');
    publish('alice', { type: 'turn.end', stopReason: 'end_turn', steps: 2, text: '' });
    const spans = exporter.getFinishedSpans();
    const taskOf = (callId: string) =>
      spans.find((s) => s.attributes[ATTR.toolCallId] === callId)?.attributes[ATTR.task];
    expect([taskOf('call-1'), taskOf('call-2'), taskOf('call-3')]).toEqual([
      undefined,
      'task-1',
      undefined,
    ]);
    expect(
      spans
        .filter((s) => s.name.startsWith('chat'))
        .map((s) => [s.name, s.attributes[ATTR.task], s.attributes[ATTR.requestModel]]),
    ).toEqual([
      ['chat', undefined, undefined],
      ['chat gpt-x', 'task-1', 'gpt-x'],
    ]);
    const { resourceMetrics } = await reader.collect();
    const tokens = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === METRIC.tokenUsage);
    expect(
      tokens?.dataPoints
        .map((p) => `${p.attributes[ATTR.tokenType]}:${p.attributes[ATTR.requestModel] ?? '-'}`)
        .sort(),
    ).toEqual(['input:-', 'input:gpt-x', 'output:-', 'output:gpt-x']);
  });

  it('never throws into the runtime, and forwards every event through wrap', () => {
    const { telemetry } = setup();
    const seen: string[] = [];
    const sink = telemetry.wrap({ publish: (_name, event) => seen.push(event.type) });
    sink.publish('x', { type: 'record', record: null as unknown as TeamRecord });
    sink.publish('x', { type: 'model.step', step: 1, usage: null as never });
    expect(seen).toEqual(['record', 'model.step']);
  });
});

describe('W3C trace context', () => {
  it('round-trips a span context, sampled flag and trace state included', () => {
    const trace = toMessageTrace({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
    });
    expect(trace).toEqual({
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    const back = fromMessageTrace({ ...trace!, tracestate: 'vendor=abc' });
    expect(back).toMatchObject({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
    expect(back?.traceState?.get('vendor')).toBe('abc');
    expect(
      fromMessageTrace({ traceparent: '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }),
    ).toBeUndefined();
    expect(
      toMessageTrace({ traceId: '0'.repeat(32), spanId: 'b7ad6b7169203331', traceFlags: 1 }),
    ).toBeUndefined();
  });
});
