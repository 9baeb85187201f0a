import type { Clock, IdSource } from '../clock.js';
import type { EventSink } from '../ports/events.js';
import type { TeamPolicy } from '../ports/team-policy.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import type { WireFormat } from '../ports/wire-format.js';
import type { Member, QueuedMessage, TeamRecord } from '../records.js';
import type { TeamState } from '../state/index.js';
import type { ToolSet } from './agent-loop.js';
import type { AgentDefinition } from './agents.js';
import type { TeamGates } from './approvals.js';
import type { ResolvedContextBudget } from './context-budget.js';
import type { MemberWorkspaces } from './member-workspaces.js';
import type { AgentRef, MemberTeamService } from './service-types.js';

/**
 * The narrow context a runner gets: what it reads (state, settings), how it commits (through the
 * pipeline, fenced as its member), its transcript store, the format and the policy, its events,
 * and four callbacks into the pool (its tools, its member's view, "my activity changed", "my
 * write was fenced"). The pool builds it from its parts; a runner never holds the pool.
 * Internal: tools never get it, only the {@link MemberTeamService} of their member.
 */
export interface RunnerHost {
  readonly teamId: string;
  readonly state: TeamState;
  readonly format: WireFormat;
  readonly policy: TeamPolicy;
  readonly events: EventSink;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly transcripts: TranscriptStore;
  /** Retry interval of idle-claim while parked; undefined when idle-claim is off. */
  readonly idleClaimIntervalMs: number | undefined;
  readonly maxSteps: number;
  /** Identical failing tool calls in a row that end a member's turn (see `RepeatedFailureGuard`). */
  readonly maxRepeatedFailures: number;
  /** The team's context budget; an agent definition's `context` overrides it. */
  readonly contextBudget: ResolvedContextBudget | undefined;
  /** Where members work: the team's directory, or an isolated member's own workspace. */
  readonly workspaces: MemberWorkspaces;
  /** Throws `DISPOSED` / `STORE_CLOSED` once the service can no longer write. */
  guard(): void;
  /** True once the service is disposed or broken: a runner then stops without writing. */
  readonly closed: boolean;
  /**
   * Decides a command for `actor` (`decide` applies its records to the state and returns them),
   * appends them, publishes them under the actor's name and resolves with the durable records.
   */
  commit<R extends readonly TeamRecord[]>(actor: Member, decide: () => R): Promise<R>;
  /** Pending mail of `memberId` whose `message.queued` record is already durable, in queue order. */
  deliverable(memberId: string): readonly QueuedMessage[];
  refFor(memberId: string): AgentRef;
  /** The team as `agent`'s member sees it: what that member's tools get. */
  memberService(agent: AgentRef): MemberTeamService;
  toolsFor(member: Member, definition: AgentDefinition, mode?: 'plan'): ToolSet;
  /** The host's quality gates, if any. */
  readonly gates: TeamGates | undefined;
  /** Called whenever a runner's activity changes, so `idle()` can settle. */
  runnerChanged(): void;
  /**
   * A store refused a write for `memberId` as `FENCED` (another process runs it now) before the
   * placement said so: its runner here stops, and the placement looks again.
   */
  fenced(memberId: string): void;
}
