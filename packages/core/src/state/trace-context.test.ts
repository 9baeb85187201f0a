import { describe, expect, it } from 'vitest';
import { parseTeamRecord } from '../records.js';
import { TeamState } from './team-state.js';
import { createTestTeam, TEAM_ID } from './test-fixtures.js';

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function send(team: ReturnType<typeof createTestTeam>, to: string, id: string) {
  return team.run((s) =>
    s.queueMessage({
      id,
      senderId: team.leadId,
      targetId: to,
      kind: 'message',
      delivery: 'wakeup',
      content: [{ type: 'text', text: 'hi' }],
    }),
  );
}

describe('trace context on queued mail', () => {
  it('stamps the sender’s context and writes the message with schema version 3', () => {
    const asked: string[] = [];
    const team = createTestTeam({
      traceContext: {
        current(name) {
          asked.push(name);
          return { traceparent: PARENT, tracestate: 'vendor=1' };
        },
      },
    });
    const alice = team.spawn('alice');
    const record = send(team, alice, 'msg-1');
    expect(asked).toEqual(['lead']);
    expect(record.schemaVersion).toBe(3);
    expect(record.message.trace).toEqual({ traceparent: PARENT, tracestate: 'vendor=1' });
    // it survives a replay of the log, and the state keeps it
    const replayed = TeamState.fromRecords(
      team.log.map((r) => parseTeamRecord(r)),
      {
        teamId: TEAM_ID,
      },
    );
    expect(replayed.pending(alice)[0]?.trace?.traceparent).toBe(PARENT);
  });

  it('stores nothing and keeps version 1 without a context, or with an invalid one', () => {
    const contexts = [
      undefined,
      { traceparent: 'not-a-traceparent' },
      { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' },
      { traceparent: PARENT, tracestate: 'x'.repeat(513) },
    ];
    for (const [i, context] of contexts.entries()) {
      const team = createTestTeam({ traceContext: { current: () => context } });
      const alice = team.spawn('alice');
      const record = send(team, alice, `msg-${i}`);
      expect(record.schemaVersion).toBe(1);
      expect(record.message.trace).toBeUndefined();
    }
  });

  it('never fails a send when the source throws', () => {
    const team = createTestTeam({
      traceContext: {
        current() {
          throw new Error('broken tracer');
        },
      },
    });
    const alice = team.spawn('alice');
    const record = send(team, alice, 'msg-1');
    expect(record.message.trace).toBeUndefined();
    expect(record.schemaVersion).toBe(1);
  });

  it('refuses a version 1 record that carries a trace context', () => {
    const team = createTestTeam({ traceContext: { current: () => ({ traceparent: PARENT }) } });
    const alice = team.spawn('alice');
    const record = send(team, alice, 'msg-1');
    const fresh = createTestTeam();
    fresh.spawn('alice');
    expect(() => fresh.state.apply({ ...record, schemaVersion: 1 })).toThrow(/schema version 3/);
  });
});
