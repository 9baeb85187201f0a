/** A member that must run somewhere: the lead, or an active teammate. */
export interface PlacementCandidate {
  /** The member's id. */
  readonly memberId: string;
  /** Its agent type, which decides the processes willing to run it. */
  readonly agentType: string;
  /** True for the team's lead. */
  readonly isLead: boolean;
  /**
   * True for an external member this process serves (its client connects here): only a process
   * that lists it may run it, whatever its agent type, and such a process claims it at once
   * instead of leaving it to the least-loaded one.
   */
  readonly pinned?: boolean;
  /**
   * The capabilities a process must have to run this member (its agent type's
   * `placement.requires`, and the workspace provider's capability for a member with a worktree
   * of its own): it is placed only on, and taken over only by, a process that has every one.
   */
  readonly requires?: readonly string[] | undefined;
}

/** What a placement tells the team service about the members of this process. */
export interface PlacementListener {
  /** This process now runs `memberId`: the service revives it from its transcript if it has work. */
  acquired(memberId: string): void;
  /** This process no longer runs `memberId`: its runner stops and nothing more is written for it. */
  lost(memberId: string): void;
  /**
   * The placement wants to hand `memberId` to another process (rebalancing, or this process
   * closing): resolves once its runner reached a turn boundary and stopped, so nothing more is
   * written for it and nothing it did is redone elsewhere. A running turn finishes first; a member
   * that is idle or waits for an approval stops at once. Until the placement answers with `lost`
   * (handed over) or `acquired` (kept after all), the member is not revived here. Optional for the
   * placement to call: one that never does hands members over only when a process dies or closes.
   */
  release?(memberId: string): Promise<void>;
  /**
   * The placement's {@link MemberPlacement.view} changed (a member moved, a process came or went,
   * a process reported new activity): statuses derived from it may differ now.
   */
  changed?(): void;
}

/** What a member is doing, as the process that runs it reports it to the others. */
export type MemberActivity = 'running' | 'idle';

/** Where a member runs, as every process of the team sees it. */
export interface PlacedMember {
  /** The member. */
  readonly memberId: string;
  /** The process that runs it (the store's id for it). */
  readonly processId: string;
  /** True when that process is this one. */
  readonly here: boolean;
  /**
   * What that process last reported the member doing, `undefined` before its first report. A
   * report is as old as the process's last heartbeat at most.
   */
  readonly activity: MemberActivity | undefined;
  /**
   * The seq of the last team record the reporting process had applied when it made the report,
   * when it said: a record after it that starts the member working (its claim of a task, mail
   * delivered to it) is news the report predates, and the member counts as running until a report
   * covers it.
   */
  readonly reportedThrough?: number | undefined;
}

/**
 * The team's placement as a process sees it: which live process runs which member, and which
 * members wait for one. Built from the team's shared records (rows, heartbeats), so it is the same
 * in every process up to one heartbeat.
 */
export interface PlacementView {
  /** Members placed on a live process (a process whose heartbeat is within its lease). */
  readonly placed: ReadonlyMap<string, PlacedMember>;
  /**
   * Candidates no live process runs yet, for which some live process is willing: the placement
   * will hand them out (a takeover in progress, a member just spawned).
   */
  readonly awaiting: ReadonlySet<string>;
  /** How many processes of the team are live, this one included. */
  readonly liveProcesses: number;
  /**
   * Candidates no live process can host although some live process would run their agent type:
   * each with the capabilities it requires that none of those processes has. They wait until a
   * process with them joins. Optional: a placement without capabilities has none.
   */
  readonly unhostable?: ReadonlyMap<string, readonly string[]> | undefined;
}

/**
 * Which process runs each member. In one process every member runs there (the default, when
 * `openTeam` gets no placement and the log is not shared); a multi-process store (e.g.
 * `@teamwire/postgres`) spreads members over the processes willing to run them and moves a dead
 * process's members to a live one. Whatever a process believes, the store refuses its writes for
 * a member it lost (`FENCED`): the placement only tells runners when to start and stop.
 */
export interface MemberPlacement {
  /** The version of this port the placement implements; checked when a team opens. */
  readonly specificationVersion: 'v1';
  /**
   * Starts placing the members `candidates()` returns (called again whenever they may have
   * changed) and reporting what this process gains and loses to `listener`. Resolves once this
   * process's first claims settled, so a process willing to run the lead runs it on return.
   */
  start(options: {
    candidates(): readonly PlacementCandidate[];
    listener: PlacementListener;
    /**
     * Capabilities this process has because of how its team was opened (the workspace
     * provider's repository), added to those the placement was configured with.
     */
    capabilities?: readonly string[] | undefined;
  }): Promise<void>;
  /** True while this process runs `memberId`. */
  runsHere(memberId: string): boolean;
  /** The candidates changed (a member was spawned, activated, retired or failed): look again. */
  candidatesChanged(): void;
  /**
   * Publishes what the members this process runs are doing, for the other processes' views; the
   * latest report replaces the previous one and goes out with the next heartbeat at the latest.
   * `through`: the seq of the last team record this process had applied, shown to the others as
   * {@link PlacedMember.reportedThrough}. Optional: a placement of one process has no one to tell.
   */
  report?(activity: ReadonlyMap<string, MemberActivity>, through?: number): void;
  /**
   * The placement as this process sees it now (see {@link PlacementView}); listeners hear
   * `changed` when it moves. Optional: without it, a process sees only the members it runs.
   */
  view?(): PlacementView;
  /**
   * Stops placing and hands back the members this process runs, so another process takes them
   * over at once instead of after a timeout: each at its next turn boundary (through
   * {@link PlacementListener.release}), waiting at most `HANDOVER_WAIT_MS`, after which the rest
   * are handed back anyway (a turn cut short is redone by the process that takes the member).
   * Idempotent.
   */
  close(): Promise<void>;
}
