import { TeamError } from '../errors.js';
import type { Member } from '../records.js';
import { isLivePhase, type TeamState } from '../state/index.js';
import type { AgentRef } from './service-types.js';

/**
 * The credentials a service issues: one frozen {@link AgentRef} per member, recognised by
 * identity (a weak map), never by its fields, so a forged or foreign ref is refused whatever it
 * says.
 */
export class Credentials {
  private readonly refs = new Map<string, AgentRef>();
  private readonly issued = new WeakMap<object, string>();

  constructor(private readonly state: TeamState) {}

  /** The member's credential (issued once, then the same object). */
  refFor(memberId: string): AgentRef {
    let ref = this.refs.get(memberId);
    if (ref === undefined) {
      const member = this.state.member(memberId);
      if (member === undefined) {
        throw new TeamError('UNKNOWN_MEMBER', `no member with id ${memberId}`, {
          details: { memberId },
        });
      }
      ref = Object.freeze({ memberId, name: member.name });
      this.refs.set(memberId, ref);
      this.issued.set(ref, memberId);
    }
    return ref;
  }

  /** The member id this service issued `agent` for; `NOT_A_MEMBER` for anything else. */
  memberIdOf(agent: AgentRef): string {
    const memberId =
      typeof agent === 'object' && agent !== null ? this.issued.get(agent) : undefined;
    if (memberId === undefined) {
      throw new TeamError(
        'NOT_A_MEMBER',
        'this agent credential was not issued by this team service',
      );
    }
    return memberId;
  }

  /** Resolves a credential to its live member, or throws `NOT_A_MEMBER`. */
  resolve(agent: AgentRef): Member {
    const memberId = this.memberIdOf(agent);
    const member = this.state.member(memberId);
    if (member === undefined || !isLivePhase(member.phase)) {
      throw new TeamError(
        'NOT_A_MEMBER',
        `${agent.name} is no longer a live member of the team (${member?.phase ?? 'unknown'})`,
        { details: { memberId, phase: member?.phase } },
      );
    }
    return member;
  }
}
