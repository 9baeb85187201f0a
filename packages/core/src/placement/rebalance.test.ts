import { describe, expect, it } from 'vitest';
import { REBALANCE_HOLD_LOOKS, REBALANCE_MARGIN, REBALANCE_PERIOD_LOOKS } from '../limits.js';
import {
  bestMove,
  REBALANCE_START,
  type RebalanceLook,
  type RebalanceMemory,
  type RebalanceMove,
  rebalanceStep,
} from './rebalance.js';

/** A team: which process runs which member, and which processes are willing for each member. */
interface Team {
  placed: Map<string, string>;
  willing: (memberId: string, processId: string) => boolean;
  processes: string[];
  busy?: (memberId: string) => boolean;
}

function lookOf(team: Team, self: string, loads = loadsOf(team)): RebalanceLook {
  return {
    self,
    processes: team.processes.map((processId) => ({
      processId,
      members: loads.get(processId) ?? 0,
    })),
    movable: [...team.placed]
      .filter(([, processId]) => processId === self)
      .map(([memberId]) => ({
        memberId,
        targets: team.processes.filter((p) => p !== self && team.willing(memberId, p)),
        busy: team.busy?.(memberId) ?? false,
      })),
  };
}

function loadsOf(team: Team): Map<string, number> {
  const loads = new Map<string, number>(team.processes.map((p) => [p, 0]));
  for (const processId of team.placed.values())
    loads.set(processId, (loads.get(processId) ?? 0) + 1);
  return loads;
}

function squares(team: Team): number {
  let sum = 0;
  for (const load of loadsOf(team).values()) sum += load * load;
  return sum;
}

/**
 * Runs `looks` rounds in which every process looks once (seeing the loads of `lag` rounds ago),
 * applying every move at once; returns the moves, per round.
 */
function simulate(team: Team, looks: number, lag = 0): RebalanceMove[][] {
  const memory = new Map<string, RebalanceMemory>(team.processes.map((p) => [p, REBALANCE_START]));
  const history: Map<string, number>[] = [];
  const rounds: RebalanceMove[][] = [];
  for (let round = 0; round < looks; round++) {
    history.push(loadsOf(team));
    const seen = history[Math.max(0, history.length - 1 - lag)] as Map<string, number>;
    const moves: RebalanceMove[] = [];
    for (const self of team.processes) {
      const look = lookOf(team, self, seen);
      const step = rebalanceStep(memory.get(self) as RebalanceMemory, look);
      memory.set(self, step.memory);
      if (step.move !== undefined) moves.push(step.move);
    }
    for (const move of moves) {
      expect(team.willing(move.memberId, move.to)).toBe(true);
      team.placed.set(move.memberId, move.to);
    }
    rounds.push(moves);
  }
  return rounds;
}

function teamOf(loads: Record<string, number>): Team {
  const placed = new Map<string, string>();
  let n = 0;
  for (const [processId, count] of Object.entries(loads)) {
    for (let i = 0; i < count; i++) placed.set(`m${String(n++).padStart(3, '0')}`, processId);
  }
  return { placed, processes: Object.keys(loads), willing: () => true };
}

/** A small deterministic PRNG, so a failing shape can be replayed. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('rebalanceStep', () => {
  it('moves nothing before the imbalance held for the hold, then one member to the least loaded', () => {
    const team = teamOf({ a: 4, b: 0 });
    let memory = REBALANCE_START;
    for (let look = 1; look < REBALANCE_HOLD_LOOKS; look++) {
      const step = rebalanceStep(memory, lookOf(team, 'a'));
      expect(step.move).toBeUndefined();
      memory = step.memory;
    }
    const step = rebalanceStep(memory, lookOf(team, 'a'));
    expect(step.move).toEqual({ memberId: 'm000', to: 'b' });
    expect(step.memory).toEqual({ held: 0, sinceMove: 0 });
  });

  it('an even look in between starts the hold again', () => {
    const uneven = teamOf({ a: 4, b: 0 });
    const even = teamOf({ a: 2, b: 2 });
    let memory = REBALANCE_START;
    for (let look = 1; look < REBALANCE_HOLD_LOOKS; look++) {
      memory = rebalanceStep(memory, lookOf(uneven, 'a')).memory;
    }
    memory = rebalanceStep(memory, lookOf(even, 'a')).memory;
    expect(memory.held).toBe(0);
    expect(rebalanceStep(memory, lookOf(uneven, 'a')).move).toBeUndefined();
  });

  it('moves at most one member per period', () => {
    const team = teamOf({ a: 10, b: 0 });
    let memory = REBALANCE_START;
    const movedAt: number[] = [];
    for (let look = 0; look < 4 * REBALANCE_PERIOD_LOOKS; look++) {
      const step = rebalanceStep(memory, lookOf(team, 'a'));
      memory = step.memory;
      if (step.move !== undefined) movedAt.push(look);
    }
    expect(movedAt.length).toBeGreaterThan(1);
    for (let i = 1; i < movedAt.length; i++) {
      expect((movedAt[i] as number) - (movedAt[i - 1] as number)).toBeGreaterThanOrEqual(
        REBALANCE_PERIOD_LOOKS,
      );
    }
  });

  it('never moves within the margin', () => {
    for (let diff = 0; diff <= REBALANCE_MARGIN; diff++) {
      const team = teamOf({ a: 3 + diff, b: 3 });
      expect(bestMove(lookOf(team, 'a'))).toBeUndefined();
      expect(simulate(team, 50).flat()).toEqual([]);
    }
    expect(bestMove(lookOf(teamOf({ a: 3 + REBALANCE_MARGIN + 1, b: 3 }), 'a'))).toBeDefined();
  });

  it('only the most loaded process moves; ties go to the smallest id', () => {
    const team = teamOf({ a: 3, b: 3, c: 0 });
    expect(bestMove(lookOf(team, 'a'))?.to).toBe('c');
    expect(bestMove(lookOf(team, 'b'))).toBeUndefined();
    expect(bestMove(lookOf(team, 'c'))).toBeUndefined();
  });

  it('prefers an idle member, and moves only to a willing process', () => {
    const team = teamOf({ a: 3, b: 0, c: 1 });
    team.busy = (memberId) => memberId === 'm000';
    expect(bestMove(lookOf(team, 'a'))).toEqual({ memberId: 'm001', to: 'b' });
    team.willing = (memberId, processId) => processId !== 'b' || memberId === 'm000';
    // m000 may go to b (load 0); the others only to c (load 1): the least loaded target wins
    expect(bestMove(lookOf(team, 'a'))).toEqual({ memberId: 'm000', to: 'b' });
    team.willing = () => false;
    expect(bestMove(lookOf(team, 'a'))).toBeUndefined();
  });

  it('a process missing from the look, or running nothing movable, moves nothing', () => {
    const team = teamOf({ a: 3, b: 0 });
    expect(bestMove({ ...lookOf(team, 'a'), self: 'z' })).toBeUndefined();
    expect(bestMove({ ...lookOf(team, 'a'), movable: [] })).toBeUndefined();
  });

  it('spreads a late joiner in, then stays put (no bounce over many looks)', () => {
    const team = teamOf({ a: 5, b: 4 });
    team.processes.push('c');
    const rounds = simulate(team, 40 * REBALANCE_PERIOD_LOOKS);
    const loads = [...loadsOf(team).values()].sort();
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(REBALANCE_MARGIN);
    expect(loadsOf(team).get('c')).toBe(3);
    const lastMove = rounds.findLastIndex((moves) => moves.length > 0);
    expect(rounds.slice(lastMove + 1).length).toBeGreaterThan(30 * REBALANCE_PERIOD_LOOKS);
  });

  it('over many random load shapes: every move lowers the squared loads, and moves stop', () => {
    const random = prng(32);
    for (let shape = 0; shape < 300; shape++) {
      const processes = 1 + Math.floor(random() * 6);
      const loads: Record<string, number> = {};
      for (let p = 0; p < processes; p++) loads[`p${p}`] = Math.floor(random() * 12);
      const team = teamOf(loads);
      const everyone = random() < 0.5;
      const refused = new Set<string>();
      if (!everyone) {
        for (const memberId of team.placed.keys()) {
          for (const p of team.processes) if (random() < 0.3) refused.add(`${memberId}@${p}`);
        }
      }
      team.willing = (memberId, processId) => !refused.has(`${memberId}@${processId}`);
      team.busy = () => random() < 0.3;
      const memory = new Map<string, RebalanceMemory>(
        team.processes.map((p) => [p, REBALANCE_START]),
      );
      let quiet = 0;
      let looks = 0;
      while (quiet < 5 * REBALANCE_PERIOD_LOOKS) {
        looks++;
        expect(looks).toBeLessThan(2000);
        const moves: RebalanceMove[] = [];
        for (const self of team.processes) {
          const step = rebalanceStep(memory.get(self) as RebalanceMemory, lookOf(team, self));
          memory.set(self, step.memory);
          if (step.move !== undefined) moves.push(step.move);
        }
        // processes that see the same loads: one moves at a time
        expect(moves.length).toBeLessThanOrEqual(1);
        for (const move of moves) {
          const before = squares(team);
          expect(team.willing(move.memberId, move.to)).toBe(true);
          team.placed.set(move.memberId, move.to);
          expect(squares(team)).toBeLessThan(before);
        }
        quiet = moves.length === 0 ? quiet + 1 : 0;
      }
      if (everyone) {
        const final = [...loadsOf(team).values()];
        expect(Math.max(...final) - Math.min(...final)).toBeLessThanOrEqual(REBALANCE_MARGIN);
      }
    }
  });

  it('processes that see loads a look late still settle, without a member going back and forth', () => {
    const random = prng(7);
    for (let shape = 0; shape < 100; shape++) {
      const loads: Record<string, number> = {};
      const processes = 2 + Math.floor(random() * 4);
      for (let p = 0; p < processes; p++) loads[`p${p}`] = Math.floor(random() * 10);
      const team = teamOf(loads);
      const trail = new Map<string, string[]>();
      const rounds = simulate(team, 60 * REBALANCE_PERIOD_LOOKS, 1);
      for (const move of rounds.flat()) {
        trail.set(move.memberId, [...(trail.get(move.memberId) ?? []), move.to]);
      }
      // the last third of the run is quiet
      expect(rounds.slice(40 * REBALANCE_PERIOD_LOOKS).flat()).toEqual([]);
      for (const to of trail.values()) expect(to.length).toBeLessThanOrEqual(2);
    }
  });
});
