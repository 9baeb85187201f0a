import type { MemberStatus } from '../ports/events.js';
import type {
  MemberActivity,
  MemberPlacement,
  PlacedMember,
  PlacementCandidate,
  PlacementView,
} from '../ports/placement.js';
import type { Member, TeamRecord } from '../records.js';
import type { TeamState } from '../state/index.js';

/** What the placement side tells the runners' side, and asks of it. */
export interface PlacementSideOptions {
  /** The team's placement; undefined: every member runs in this process. */
  placement: MemberPlacement | undefined;
  state: TeamState;
  /** True for a member whose turns a client takes. */
  isExternal(member: Member): boolean;
  /** Which external members this process serves (claims), by name. */
  serveExternal(name: string): boolean;
  /**
   * The capabilities a process must have to run `member` (its type's and its workspace's);
   * default none.
   */
  requires?: ((member: Member) => readonly string[]) | undefined;
  /** Capabilities this process has by how its team was opened (its workspace provider's). */
  capabilities?: (() => Promise<readonly string[]>) | undefined;
  /** This process now runs `memberId`. */
  acquired(memberId: string): void;
  /** This process no longer runs `memberId`. */
  lost(memberId: string): void;
  /** Stop `memberId` at its next turn boundary, for a handover (see `PlacementListener.release`). */
  release(memberId: string): Promise<void>;
  /** The view changed: statuses and progress derived from it may differ. */
  changed?: (() => void) | undefined;
}

/**
 * The placement side of a team in this process: which members must run somewhere (candidates),
 * which run here, where the others run and what their processes report, and what this process
 * reports of its own. The runner side (`RunnerPool`) starts and stops runners when it hears
 * `acquired` and `lost`. Without a placement every member runs here and nothing is reported.
 */
export class PlacementSide {
  /** The last activity reported, with the seq that started each member then (0: none). */
  private reported = new Map<string, { status: MemberActivity; started: number }>();
  /** Per member, the seq of the latest record that started it working (see `noteDurable`). */
  private readonly started = new Map<string, number>();

  constructor(private readonly options: PlacementSideOptions) {}

  /** True when the team spreads over processes. */
  get placed(): boolean {
    return this.options.placement !== undefined;
  }

  /** True when `memberId` runs in this process (always, without a placement). */
  runsHere(memberId: string): boolean {
    const { placement } = this.options;
    return placement === undefined || placement.runsHere(memberId);
  }

  /**
   * Starts placing members: resolves once this process's first claims settled (the members it
   * acquired then were handed to `acquired`).
   */
  async start(): Promise<void> {
    const { placement } = this.options;
    if (placement === undefined) return;
    const capabilities = (await this.options.capabilities?.()) ?? [];
    await placement.start({
      candidates: () => this.candidates(),
      ...(capabilities.length === 0 ? {} : { capabilities }),
      listener: {
        acquired: (memberId) => this.options.acquired(memberId),
        lost: (memberId) => this.options.lost(memberId),
        release: (memberId) => this.options.release(memberId),
        changed: () => this.options.changed?.(),
      },
    });
  }

  /** The candidates may have changed (a member was spawned, activated, retired or failed). */
  candidatesChanged(): void {
    this.options.placement?.candidatesChanged();
  }

  /** The team's placement as this process sees it, when the placement shows one. */
  view(): PlacementView | undefined {
    return this.options.placement?.view?.();
  }

  /**
   * Notes the records that start a member working, from the feed of durable records: a task it
   * owns going `in_progress` (its claim) and mail delivered into its transcript. A report made
   * before such a record is stale for that member (see {@link elsewhereStatus}).
   */
  noteDurable(records: readonly TeamRecord[]): void {
    if (!this.placed) return;
    for (const record of records) {
      if (record.type === 'task' && record.task.status === 'in_progress') {
        const owner = record.task.ownerId;
        if (owner !== undefined) this.started.set(owner, record.seq);
      } else if (record.type === 'message.delivered') {
        this.started.set(record.targetId, record.seq);
      } else if (record.type === 'member' && record.member.phase !== 'active') {
        this.started.delete(record.member.id);
      }
    }
  }

  /**
   * The status of a member another live process runs, as that process reports it: `inactive`
   * before its first report (it has no runner there), and `running` while the report predates a
   * record that started the member working (the process has not reported since: reports are
   * rate-limited, records are not), so no process takes a member that just claimed a task for an
   * idle one. Undefined when the member runs here or nowhere.
   */
  elsewhereStatus(memberId: string): MemberStatus | undefined {
    const placed = this.elsewhere(memberId);
    if (placed === undefined) return undefined;
    if (placed.activity === undefined) return 'inactive';
    const started = this.started.get(memberId);
    if (
      placed.activity === 'idle' &&
      placed.reportedThrough !== undefined &&
      started !== undefined &&
      started > placed.reportedThrough
    ) {
      return 'running';
    }
    return placed.activity;
  }

  /** Where another live process runs `memberId`, with what it reports; undefined when here or nowhere. */
  elsewhere(memberId: string): PlacedMember | undefined {
    const placed = this.view()?.placed.get(memberId);
    return placed === undefined || placed.here ? undefined : placed;
  }

  /** Where a member runs, when the placement knows. */
  processOf(memberId: string): { processId: string; here: boolean } | undefined {
    const placed = this.view()?.placed.get(memberId);
    return placed === undefined ? undefined : { processId: placed.processId, here: placed.here };
  }

  /**
   * Tells the placement what the members this process runs are doing, when that changed, so
   * every other process shows them as they are.
   */
  report(activity: ReadonlyMap<string, MemberActivity>): void {
    const placement = this.options.placement;
    if (placement?.report === undefined) return;
    // A record that started one of these members is compared too: the others hear that this
    // process has seen it, even when the member's activity looks the same as before. Entry by
    // entry, building nothing: the pool asks after every durable record of the team.
    if (this.sameAsReported(activity)) return;
    this.reported = new Map();
    for (const [memberId, status] of activity) {
      this.reported.set(memberId, { status, started: this.started.get(memberId) ?? 0 });
    }
    placement.report(activity, this.options.state.lastSeq);
  }

  /** True when `activity` (and what started its members) is what was last reported. */
  private sameAsReported(activity: ReadonlyMap<string, MemberActivity>): boolean {
    const reported = this.reported;
    if (reported.size !== activity.size) return false;
    for (const [memberId, status] of activity) {
      const before = reported.get(memberId);
      if (before?.status !== status || before.started !== (this.started.get(memberId) ?? 0)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Members that must run somewhere: the lead and every teammate active in the durable records. A
   * retirement still being appended leaves its member a candidate, so its process keeps the
   * member (and may write the retirement) until the retirement is durable.
   */
  private candidates(): PlacementCandidate[] {
    const { state } = this.options;
    const leadId = state.leadId;
    const out: PlacementCandidate[] = [];
    for (const member of state.members()) {
      if (state.settledMember(member.id)?.phase !== 'active') continue;
      const requires = this.options.requires?.(member) ?? [];
      const candidate: PlacementCandidate = {
        memberId: member.id,
        agentType: member.agentType,
        isLead: member.id === leadId,
        ...(requires.length === 0 ? {} : { requires }),
      };
      if (!this.options.isExternal(member)) out.push(candidate);
      else if (this.options.serveExternal(member.name)) out.push({ ...candidate, pinned: true });
    }
    return out;
  }
}
