import type { AgentRunner } from './runner.js';

/** What the waker needs from the service. */
export interface WakerHost {
  /** Every runner the service created, live or stopped, by member id. */
  readonly runners: ReadonlyMap<string, AgentRunner>;
  /** Whether a member may be revived now (an `active` member; retired and failed stay down). */
  isRevivable(memberId: string): boolean;
  /** Builds and registers a runner; the waker starts it. */
  createRunner(memberId: string, resumeTasks?: readonly string[]): AgentRunner;
  /** A member could not be revived (e.g. its agent type is no longer registered). */
  reviveFailed(memberId: string, error: unknown): void;
}

/**
 * Revives stopped teammates lazily, the first time something needs them (a wakeup message, a
 * task to resume, a ready task at open). The new runner is registered synchronously, before it
 * loads its transcript, so any number of concurrent wakes revive a member exactly once; a wake of
 * a live runner only nudges it. A revival that cannot even start (say, the member's agent type is
 * no longer registered) is reported, never thrown at the sender, whose message is already durable.
 */
export class Waker {
  constructor(private readonly host: WakerHost) {}

  /** Nudges the member's live runner or revives it. Returns the runner, if there is one now. */
  wake(memberId: string, resumeTasks?: readonly string[]): AgentRunner | undefined {
    const existing = this.host.runners.get(memberId);
    if (existing?.live) {
      existing.notify();
      return existing;
    }
    if (!this.host.isRevivable(memberId)) return undefined;
    let runner: AgentRunner;
    try {
      runner = this.host.createRunner(memberId, resumeTasks);
    } catch (error) {
      // The mail that asked for the wake is durable; the member stays inactive until it can run.
      this.host.reviveFailed(memberId, error);
      return undefined;
    }
    void runner.start();
    return runner;
  }
}
