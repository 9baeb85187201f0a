import { TeamError } from '../errors.js';
import type { DisplayNameLease } from './types.js';

/**
 * Hands out display names for one-shot subagents: the bare type, else `type #2`, `type #3`, …,
 * always the lowest free one, so names recycle once their runs end. `isTaken` lets the owner add
 * names that are busy for other reasons (an active agent, a team member).
 */
export class DisplayNames {
  private readonly leases = new Map<string, DisplayNameLease>();

  constructor(
    private readonly isTaken: (name: string) => boolean,
    private readonly onRelease: (name: string) => void,
  ) {}

  acquire(agentType: string): DisplayNameLease {
    if (typeof agentType !== 'string' || agentType.trim() === '') {
      throw new TeamError('INVALID_ARGUMENT', 'agentType must be a non-empty string');
    }
    let name = agentType;
    for (let n = 2; this.leases.has(name) || this.isTaken(name); n++) name = `${agentType} #${n}`;
    const leases = this.leases;
    const onRelease = this.onRelease;
    let released = false;
    const lease: DisplayNameLease = {
      name,
      release() {
        // A late second release must not free the name for (or stop) its next holder.
        if (released) return;
        released = true;
        leases.delete(name);
        onRelease(name);
      },
    };
    leases.set(name, lease);
    return lease;
  }

  isLeased(name: string): boolean {
    return this.leases.has(name);
  }
}
