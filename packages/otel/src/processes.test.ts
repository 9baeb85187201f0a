import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { createAgentRegistry, openTeam, type TeamService } from '@teamwire/core';
import {
  createManualClock,
  createMemorySharedTeam,
  createMemoryTranscriptStore,
  createScriptedModel,
  createSequentialIds,
  createSimpleFormat,
  createSimplePolicy,
  type MemoryRuns,
} from '@teamwire/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR } from './conventions.js';
import { createTeamTelemetry } from './telemetry.js';
import { aliceScript, leadScript, only, parentOf } from './test-helpers.js';

const opened: TeamService[] = [];
afterEach(async () => {
  for (const team of opened.splice(0)) await team.dispose();
});

describe('one trace across processes', () => {
  it('follows the lead in one process and alice in another through the shared log', async () => {
    const shared = createMemorySharedTeam({ teamId: 'team-1' });
    const transcripts = createMemoryTranscriptStore();
    const model = createScriptedModel({ scripts: { lead: leadScript, alice: aliceScript } });
    const agents = createAgentRegistry([
      { type: 'lead', systemPrompt: 'You lead.', model },
      { type: 'worker', systemPrompt: 'You work.', model },
    ]);
    /** One "process": its own participant, tracer provider, exporter and telemetry. */
    const start = async (runs: MemoryRuns, ids: string) => {
      const exporter = new InMemorySpanExporter();
      const checks = new Set<() => void>();
      const provider = new BasicTracerProvider({
        spanProcessors: [new SimpleSpanProcessor(exporter)],
      });
      const telemetry = createTeamTelemetry({ tracer: provider.getTracer('test') });
      const participant = shared.join({ runs });
      const team = await openTeam({
        teamId: 'team-1',
        log: participant.log,
        transcripts,
        format: createSimpleFormat(),
        policy: createSimplePolicy(),
        agents,
        lead: { agentType: 'lead' },
        // after the telemetry has seen each event, waiters look at the spans again
        events: telemetry.wrap({
          publish() {
            for (const check of checks) check();
          },
        }),
        traceContext: telemetry.traceContext,
        clock: createManualClock(),
        ids: createSequentialIds(ids),
        idleClaim: false,
      });
      opened.push(team);
      telemetry.attach(team);
      const until = (done: () => boolean) =>
        new Promise<void>((resolve) => {
          const check = () => {
            if (!done()) return;
            checks.delete(check);
            resolve();
          };
          checks.add(check);
          check();
        });
      return { team, exporter, until };
    };
    const a = await start({ lead: true, agentTypes: [] }, 'a');
    const b = await start({ lead: false, agentTypes: ['worker'] }, 'b');

    await a.team.promptLead('Find out how many files there are.');
    // the lead's turn on alice's answer ends the exchange
    await a.until(() =>
      a.exporter
        .getFinishedSpans()
        .some(
          (s) => s.name === 'invoke_agent lead' && s.attributes[ATTR.messageKind] === 'message',
        ),
    );
    await a.team.idle();
    await b.team.idle();

    const inA = a.exporter.getFinishedSpans();
    const inB = b.exporter.getFinishedSpans();
    // each process traced only the members it runs
    expect(new Set(inA.map((s) => s.attributes[ATTR.agentName]))).toEqual(new Set(['lead']));
    expect(new Set(inB.map((s) => s.attributes[ATTR.agentName]))).toEqual(new Set(['alice']));

    const request = only(inA, 'invoke_agent lead', (s) => s.attributes[ATTR.turnReason] === 'host');
    const spawn = only(inA, 'execute_tool spawn_teammate');
    const alice = only(inB, 'invoke_agent alice');
    const send = only(inB, 'execute_tool send_message');
    const answer = only(
      inA,
      'invoke_agent lead',
      (s) => s.attributes[ATTR.messageKind] === 'message',
    );
    const traceId = request.spanContext().traceId;
    expect(alice.spanContext().traceId).toBe(traceId);
    expect(answer.spanContext().traceId).toBe(traceId);
    expect(parentOf(alice)).toBe(spawn.spanContext().spanId);
    expect(alice.links[0]?.context.spanId).toBe(spawn.spanContext().spanId);
    expect(parentOf(send)).toBe(alice.spanContext().spanId);
    expect(parentOf(answer)).toBe(send.spanContext().spanId);
    expect(answer.links[0]?.context.spanId).toBe(send.spanContext().spanId);
    // alice's model was learned from her member record, written by the other process
    expect(alice.attributes[ATTR.requestModel]).toBe('scripted-1');
    // the trace context is durable: the shared log holds it on the queued messages
    const traced = shared
      .records()
      .filter((r) => r.type === 'message.queued' && r.message.trace !== undefined);
    expect(traced.map((r) => r.schemaVersion)).toEqual(traced.map(() => 3));
    expect(traced.length).toBeGreaterThanOrEqual(2);
  });
});
