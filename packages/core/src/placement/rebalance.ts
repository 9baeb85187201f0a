import { REBALANCE_HOLD_LOOKS, REBALANCE_MARGIN, REBALANCE_PERIOD_LOOKS } from '../limits.js';

/** A live process of the team and how many members it runs, as one look of a placement saw it. */
export interface RebalanceLoad {
  /** The process (the store's id for it). */
  readonly processId: string;
  /** How many members it runs. */
  readonly members: number;
}

/** A member the looking process runs and may hand over (neither the lead nor a pinned member). */
export interface RebalanceMember {
  /** The member. */
  readonly memberId: string;
  /** The other live processes willing to run it. */
  readonly targets: readonly string[];
  /** True while it runs a turn: it moves only at the turn's end, so an idle one is preferred. */
  readonly busy: boolean;
}

/** What one look of a placement saw, from the looking process (`self`). */
export interface RebalanceLook {
  /** The looking process. */
  readonly self: string;
  /** Every live process of the team, `self` included. */
  readonly processes: readonly RebalanceLoad[];
  /** The members `self` runs that may move to another process. */
  readonly movable: readonly RebalanceMember[];
}

/** What a process remembers between looks for {@link rebalanceStep}. */
export interface RebalanceMemory {
  /** For how many consecutive looks a move was possible. */
  readonly held: number;
  /** How many looks since this process last handed a member over (capped at the period). */
  readonly sinceMove: number;
}

/** A handover {@link rebalanceStep} decided: `memberId` goes to the process `to`. */
export interface RebalanceMove {
  /** The member to hand over, at its next turn boundary. */
  readonly memberId: string;
  /** The process that takes it. */
  readonly to: string;
}

/** What {@link rebalanceStep} answers for one look. */
export interface RebalanceStep {
  /** What to remember for the next look. */
  readonly memory: RebalanceMemory;
  /** The handover to make now, if any. */
  readonly move: RebalanceMove | undefined;
}

/** The memory of a process that has not looked yet: a move needs the full hold first. */
export const REBALANCE_START: RebalanceMemory = Object.freeze({
  held: 0,
  sinceMove: REBALANCE_PERIOD_LOOKS,
});

/**
 * The rebalancing rule, applied by each process of a team at each look of its placement: whether
 * it hands one of its members to another process. Pure: the placement keeps `memory` between
 * looks and carries out the move.
 *
 * A process moves a member only when all of these hold:
 * - it is the most loaded live process (ties: the smallest process id), so in a team whose
 *   processes see the same loads one process moves at a time;
 * - some member of it has a willing process that runs more than {@link REBALANCE_MARGIN} fewer
 *   members (the least loaded such process takes it; ties: the smallest id);
 * - that was so for {@link REBALANCE_HOLD_LOOKS} consecutive looks (a process that just joined or
 *   a count caught mid-move does not trigger it);
 * - it moved no member in the last {@link REBALANCE_PERIOD_LOOKS} looks.
 *
 * A move from a process running `L` members to one running `T ≤ L - 2` lowers the sum of the
 * squared loads by `2(L - T - 1) ≥ 2`, so moves cannot go on for ever: a team never bounces a
 * member back and forth. Of the members that could go to the least loaded target, an idle one is
 * chosen first (it moves at once), then the smallest member id.
 */
export function rebalanceStep(memory: RebalanceMemory, look: RebalanceLook): RebalanceStep {
  const sinceMove = Math.min(REBALANCE_PERIOD_LOOKS, memory.sinceMove + 1);
  const move = bestMove(look);
  if (move === undefined) return { memory: { held: 0, sinceMove }, move: undefined };
  const held = Math.min(REBALANCE_HOLD_LOOKS, memory.held + 1);
  if (held < REBALANCE_HOLD_LOOKS || sinceMove < REBALANCE_PERIOD_LOOKS) {
    return { memory: { held, sinceMove }, move: undefined };
  }
  return { memory: { held: 0, sinceMove: 0 }, move };
}

/** The move this look allows, ignoring the hold and the period; undefined when none. */
export function bestMove(look: RebalanceLook): RebalanceMove | undefined {
  const loads = new Map<string, number>();
  for (const process of look.processes) loads.set(process.processId, process.members);
  const mine = loads.get(look.self);
  if (mine === undefined) return undefined;
  for (const process of look.processes) {
    if (process.processId === look.self) continue;
    if (process.members > mine || (process.members === mine && process.processId < look.self)) {
      return undefined; // another process moves first
    }
  }
  let best: { move: RebalanceMove; load: number; busy: boolean } | undefined;
  for (const member of look.movable) {
    let target: { id: string; load: number } | undefined;
    for (const id of member.targets) {
      const load = loads.get(id);
      if (id === look.self || load === undefined) continue;
      if (target === undefined || load < target.load || (load === target.load && id < target.id)) {
        target = { id, load };
      }
    }
    if (target === undefined || mine - target.load <= REBALANCE_MARGIN) continue;
    const better =
      best === undefined ||
      target.load < best.load ||
      (target.load === best.load &&
        (best.busy && !member.busy
          ? true
          : best.busy === member.busy && member.memberId < best.move.memberId));
    if (better) {
      best = {
        move: { memberId: member.memberId, to: target.id },
        load: target.load,
        busy: member.busy,
      };
    }
  }
  return best?.move;
}
