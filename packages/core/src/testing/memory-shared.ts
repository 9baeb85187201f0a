import { TeamError } from '../errors.js';
import {
  canHost,
  checkCapabilities,
  type PlacementHost,
  unmetRequirements,
} from '../placement/eligibility.js';
import type {
  MemberActivity,
  MemberPlacement,
  PlacedMember,
  PlacementCandidate,
  PlacementListener,
  PlacementView,
} from '../ports/placement.js';
import type { SharedTeamLog, TeamLog } from '../ports/team-log.js';
import type { TeamRecord } from '../records.js';
import { readTeamRecord } from '../records.js';

/** What a participant of a {@link MemorySharedTeam} is willing to run. */
export interface MemoryRuns {
  /** Runs the lead. Default true. */
  lead?: boolean;
  /** Agent types of teammates it runs; `'all'` (the default) runs any. */
  agentTypes?: readonly string[] | 'all';
  /** Placement capabilities it has (besides those its team adds when it opens). Default none. */
  capabilities?: readonly string[];
}

/** A participant's view of the shared log (its `shared` part is always there). */
export interface MemorySharedLog extends TeamLog {
  /** The doorbell and the participant's placement. */
  readonly shared: SharedTeamLog;
}

/** An append held by {@link MemoryParticipant.holdAppends}. */
export interface AppendHold {
  /** Lets the held append (and later ones) go on. */
  release(): void;
}

/** Where a member is placed. */
export interface MemoryPlacementRow {
  /** The index of the participant that runs it. */
  participant: number;
  /** The fencing token: it grows with every move. */
  token: number;
}

/** Reports held back by {@link MemoryParticipant.holdReports}. */
export interface ReportHold {
  /** Publishes the latest report held back, and lets the next ones through at once. */
  release(): void;
}

/** One participant (one "process") of a {@link MemorySharedTeam}. */
export interface MemoryParticipant {
  /** Its index, from 0 in join order. */
  readonly index: number;
  /** Its view of the shared log: pass it to `openTeam`. */
  readonly log: MemorySharedLog;
  /** Its placement (also `log.shared.placement`). */
  readonly placement: MemberPlacement;
  /**
   * Holds this participant's next append until `release()`: the test can let another
   * participant write first, to force a `SEQ_CONFLICT`.
   */
  holdAppends(): AppendHold;
  /**
   * Holds this participant's activity reports until `release()` (the others keep seeing the last
   * one published), as a placement that reports at most once per heartbeat interval does.
   */
  holdReports(): ReportHold;
  /** Appends this participant attempted, refused ones included. */
  readonly appendAttempts: number;
}

/**
 * Many in-memory "processes" of one team: a shared log with the multi-writer contract of
 * `SharedTeamLog` (`SEQ_CONFLICT` on a taken seq, `FENCED` for a member the writer does not run,
 * a doorbell on every append) and a placement that gives each active member to the willing
 * participant running the fewest, moving members by {@link MemorySharedTeam.move}.
 */
export interface MemorySharedTeam {
  /** A new participant. */
  join(options?: { runs?: MemoryRuns }): MemoryParticipant;
  /** Every durable record, in order. */
  records(): readonly TeamRecord[];
  /** Which participant runs `memberId` now, and under which fencing token. */
  placementOf(memberId: string): MemoryPlacementRow | undefined;
  /**
   * Gives `memberId` to `participant` (the old holder loses it at once, as after its lease ran
   * out): the old holder's writes for it are `FENCED` from now on.
   */
  move(memberId: string, participant: number): void;
}

interface Participant {
  index: number;
  runs: MemoryRuns;
  /** Its capabilities: `runs.capabilities` and those `start` added. */
  capabilities: readonly string[];
  listener: PlacementListener | undefined;
  candidates: (() => readonly PlacementCandidate[]) | undefined;
  closed: boolean;
  bells: Set<() => void>;
  /** What it last reported its members doing, and the seq it reported through. */
  activity: ReadonlyMap<string, MemberActivity>;
  through: number | undefined;
  /** A report held back by `holdReports`, published on release. */
  held: { activity: ReadonlyMap<string, MemberActivity>; through: number | undefined } | null;
  holding: boolean;
}

/** Creates a {@link MemorySharedTeam} for `teamId`. */
export function createMemorySharedTeam(options: { teamId: string }): MemorySharedTeam {
  const stored: TeamRecord[] = [];
  const participants: Participant[] = [];
  const placements = new Map<string, { participant: number; token: number }>();

  const hostOf = (p: Participant): PlacementHost => ({
    lead: p.runs.lead ?? true,
    agentTypes: p.runs.agentTypes ?? 'all',
    capabilities: p.capabilities,
  });
  const live = (p: Participant): boolean => !p.closed && p.listener !== undefined;
  const willing = (p: Participant, candidate: PlacementCandidate): boolean =>
    live(p) && canHost(hostOf(p), candidate);
  const load = (index: number): number =>
    [...placements.values()].filter((p) => p.participant === index).length;

  const place = (memberId: string, to: Participant): void => {
    const before = placements.get(memberId);
    placements.set(memberId, { participant: to.index, token: (before?.token ?? 0) + 1 });
    if (before !== undefined && before.participant !== to.index) {
      participants[before.participant]?.listener?.lost(memberId);
    }
    to.listener?.acquired(memberId);
    viewsChanged();
  };

  /** Places every unplaced (or orphaned) candidate on its least-loaded willing participant. */
  const rebalance = (): void => {
    const seen = new Map<string, PlacementCandidate>();
    for (const p of participants) {
      for (const candidate of p.candidates?.() ?? []) seen.set(candidate.memberId, candidate);
    }
    for (const [memberId, placed] of placements) {
      if (!seen.has(memberId)) {
        placements.delete(memberId);
        participants[placed.participant]?.listener?.lost(memberId);
      }
    }
    for (const candidate of seen.values()) {
      const current = placements.get(candidate.memberId);
      if (current !== undefined && !participants[current.participant]?.closed) continue;
      // a pinned member runs only where it is listed (an external member's serving process)
      const options = participants.filter((p) =>
        candidate.pinned === true
          ? !p.closed &&
            p.listener !== undefined &&
            (p.candidates?.() ?? []).some((c) => c.memberId === candidate.memberId)
          : willing(p, candidate),
      );
      if (options.length === 0) continue;
      options.sort((a, b) => load(a.index) - load(b.index) || a.index - b.index);
      place(candidate.memberId, options[0] as Participant);
    }
  };

  /** Every participant's listener hears that views may differ (after a microtask). */
  const viewsChanged = (): void => {
    for (const p of participants) {
      if (!p.closed) queueMicrotask(() => p.listener?.changed?.());
    }
  };

  const viewOf = (self: Participant): PlacementView => {
    const placed = new Map<string, PlacedMember>();
    for (const [memberId, row] of placements) {
      const owner = participants[row.participant];
      if (owner === undefined || owner.closed) continue;
      placed.set(memberId, {
        memberId,
        processId: `participant-${row.participant}`,
        here: owner === self,
        activity: owner.activity.get(memberId),
        reportedThrough: owner.through,
      });
    }
    const awaiting = new Set<string>();
    const unhostable = new Map<string, readonly string[]>();
    const hosts = participants.filter(live).map(hostOf);
    for (const p of participants) {
      for (const candidate of p.candidates?.() ?? []) {
        if (placed.has(candidate.memberId)) continue;
        if (participants.some((q) => willing(q, candidate))) awaiting.add(candidate.memberId);
        const unmet = unmetRequirements(hosts, candidate);
        if (unmet.length > 0) unhostable.set(candidate.memberId, unmet);
      }
    }
    return {
      placed,
      awaiting,
      liveProcesses: participants.filter((p) => !p.closed).length,
      unhostable,
    };
  };

  const ring = (except: Participant): void => {
    for (const p of participants) {
      if (p === except || p.closed) continue;
      for (const bell of p.bells) queueMicrotask(bell);
    }
  };

  return {
    join(joinOptions = {}) {
      const self: Participant = {
        index: participants.length,
        runs: joinOptions.runs ?? {},
        capabilities: checkCapabilities(joinOptions.runs?.capabilities ?? [], 'runs.capabilities'),
        listener: undefined,
        candidates: undefined,
        closed: false,
        bells: new Set(),
        activity: new Map(),
        through: undefined,
        held: null,
        holding: false,
      };
      participants.push(self);
      let held: Promise<void> | undefined;
      let attempts = 0;
      const placement: MemberPlacement = {
        specificationVersion: 'v1',
        async start(startOptions) {
          self.capabilities = checkCapabilities(
            [...self.capabilities, ...(startOptions.capabilities ?? [])],
            'capabilities',
          );
          self.listener = startOptions.listener;
          self.candidates = startOptions.candidates;
          rebalance();
        },
        runsHere: (memberId) =>
          !self.closed && placements.get(memberId)?.participant === self.index,
        candidatesChanged() {
          if (!self.closed) queueMicrotask(rebalance);
        },
        report(activity, through) {
          if (self.holding) {
            self.held = { activity: new Map(activity), through };
            return;
          }
          self.activity = new Map(activity);
          self.through = through;
          viewsChanged();
        },
        view: () => viewOf(self),
        async close() {
          if (self.closed) return;
          self.closed = true;
          for (const [memberId, placed] of placements) {
            if (placed.participant === self.index) placements.delete(memberId);
          }
          rebalance();
        },
      };
      const log: MemorySharedLog = {
        specificationVersion: 'v1',
        teamId: options.teamId,
        async append({ records, actorId }) {
          attempts++;
          if (held !== undefined) await held;
          if (self.closed) throw new TeamError('STORE_CLOSED', 'this participant closed');
          if (actorId !== undefined && placements.get(actorId)?.participant !== self.index) {
            throw new TeamError('FENCED', `participant ${self.index} does not run ${actorId}`, {
              details: { memberId: actorId },
            });
          }
          const first = records[0]?.seq;
          if (first !== undefined && first <= stored.length) {
            throw new TeamError('SEQ_CONFLICT', `seq ${first} is taken`, {
              details: { seq: first },
            });
          }
          let expected = stored.length + 1;
          const copies = records.map((record) => {
            const copy = readTeamRecord(JSON.parse(JSON.stringify(record)));
            if (copy.seq !== expected++) {
              throw new TeamError('INVALID_ARGUMENT', `append leaves a gap at seq ${copy.seq}`);
            }
            return copy;
          });
          for (const copy of copies) stored.push(copy);
          ring(self);
        },
        async *read(readOptions = {}) {
          for (let i = Math.max(1, readOptions.fromSeq ?? 1) - 1; i < stored.length; i++) {
            yield stored[i] as TeamRecord;
          }
        },
        subscribe: () => () => undefined,
        lastSeq: () => stored.length,
        async close() {
          await placement.close();
        },
        shared: {
          onAppended(listener) {
            self.bells.add(listener);
            return () => self.bells.delete(listener);
          },
          placement,
        },
      };
      return {
        index: self.index,
        log,
        placement,
        holdAppends() {
          let release = () => {};
          held = new Promise<void>((resolve) => {
            release = () => {
              held = undefined;
              resolve();
            };
          });
          return { release };
        },
        holdReports() {
          self.holding = true;
          return {
            release() {
              self.holding = false;
              const report = self.held;
              self.held = null;
              if (report !== null) placement.report?.(report.activity, report.through);
            },
          };
        },
        get appendAttempts() {
          return attempts;
        },
      };
    },
    records: () => stored,
    placementOf: (memberId) => placements.get(memberId),
    move(memberId, participant) {
      const to = participants[participant];
      if (to === undefined)
        throw new TeamError('INVALID_ARGUMENT', `no participant ${participant}`);
      place(memberId, to);
    },
  };
}
