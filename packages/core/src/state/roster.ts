import { TeamError } from '../errors.js';
import {
  AGENT_TYPE_MAX,
  MEMBER_COLOR_MAX,
  MEMBER_DESCRIPTION_MAX,
  MEMBER_ERROR_MAX,
  MEMBER_PROVIDER_MAX,
} from '../limits.js';
import type { Member, MemberPhase } from '../records.js';
import { LEAD_NAME, MEMBER_NAME_MAX, MEMBER_NAME_PATTERN } from '../records.js';
import { checkTextLimit } from './input-limits.js';
import { invariant, type Problem } from './problem.js';

/**
 * Checks a teammate name before spawning: `lead` in any case is `NAME_RESERVED` (checked first, so
 * `Lead` is reported as reserved rather than malformed); anything not matching
 * `^[a-z0-9]+(-[a-z0-9]+)*$` or longer than 64 characters is `INVALID_NAME`.
 */
export function validateMemberName(name: string): void {
  if (typeof name === 'string' && name.toLowerCase() === LEAD_NAME) {
    throw new TeamError('NAME_RESERVED', `the name "${name}" is reserved for the team lead`, {
      details: { name },
    });
  }
  if (
    typeof name !== 'string' ||
    name.length > MEMBER_NAME_MAX ||
    !MEMBER_NAME_PATTERN.test(name)
  ) {
    throw new TeamError(
      'INVALID_NAME',
      `invalid member name ${JSON.stringify(name)}: use lowercase letters and digits joined by single hyphens, at most ${MEMBER_NAME_MAX} characters`,
      { details: { name } },
    );
  }
}

/** The free-text fields of a new member, as `createLead` and `spawnMember` take them. */
export interface MemberFields {
  description: string;
  agentType: string;
  provider: string;
  color?: string | undefined;
}

/**
 * Checks the fields of a new member against their input limits (`INVALID_ARGUMENT`, details name
 * the field): `description` up to {@link MEMBER_DESCRIPTION_MAX} characters, `agentType` 1 to
 * {@link AGENT_TYPE_MAX}, `provider` up to {@link MEMBER_PROVIDER_MAX}, `color` up to
 * {@link MEMBER_COLOR_MAX}. Commands run it; replay does not, so a log written before a limit
 * existed still folds.
 */
export function validateMemberFields(fields: MemberFields): void {
  checkTextLimit('description', fields.description, MEMBER_DESCRIPTION_MAX);
  checkTextLimit('agentType', fields.agentType, AGENT_TYPE_MAX, 1);
  checkTextLimit('provider', fields.provider, MEMBER_PROVIDER_MAX);
  if (fields.color !== undefined) checkTextLimit('color', fields.color, MEMBER_COLOR_MAX);
}

/** Checks why a member failed (`error` of `setMemberPhase`): up to {@link MEMBER_ERROR_MAX} characters. */
export function validateMemberError(error: string | undefined): void {
  if (error !== undefined) checkTextLimit('error', error, MEMBER_ERROR_MAX);
}

/**
 * A member is live while it is `provisioning` or `active`: only live members may act, receive
 * mail or own tasks, and only live teammates hold a slot of the member limit.
 */
export function isLivePhase(phase: MemberPhase): boolean {
  return phase === 'provisioning' || phase === 'active';
}

const TRANSITIONS: Readonly<Record<MemberPhase, readonly MemberPhase[]>> = {
  provisioning: ['active', 'failed'],
  active: ['retired'],
  failed: [],
  retired: [],
};

/**
 * The member lifecycle: `provisioning -> active | failed`, `active -> retired`; `failed` and
 * `retired` are terminal. Restating the current phase is not a transition.
 */
export function isPhaseTransition(from: MemberPhase, to: MemberPhase): boolean {
  return TRANSITIONS[from].includes(to);
}

/**
 * Refuses a phase change that is not a transition (see {@link isPhaseTransition}) with
 * `INVALID_PHASE`. Commands and replay both run it.
 */
export function checkPhaseTransition(current: Member, to: MemberPhase): Problem | undefined {
  if (isPhaseTransition(current.phase, to)) return undefined;
  return {
    code: 'INVALID_PHASE',
    message: `member ${current.name} cannot move from phase ${current.phase} to ${String(to)}`,
    details: { memberId: current.id, from: current.phase, to },
  };
}

/**
 * A member's workspace is recorded with its move from `provisioning` to `active`, and every later
 * record keeps it unchanged: a revived member must find its work where it left it.
 */
function checkWorkspaceChange(previous: Member, member: Member): Problem | undefined {
  const before = previous.workspace;
  const after = member.workspace;
  if (before === undefined) {
    if (after === undefined || (previous.phase === 'provisioning' && member.phase === 'active')) {
      return undefined;
    }
    return invariant(
      `member ${member.id} gained a workspace in phase ${member.phase}; a workspace is recorded with the move to active`,
    );
  }
  if (
    after === undefined ||
    after.path !== before.path ||
    after.branch !== before.branch ||
    after.base !== before.base
  ) {
    return invariant(`member ${member.id} changed its workspace`);
  }
  return undefined;
}

/** What a member never changes after its first record. */
const IMMUTABLE_FIELDS = ['name', 'agentType', 'provider', 'context'] as const;

/**
 * The members of a team, kept incrementally: every member ever recorded by id, every name ever
 * used (names are never reused), the lead, and the count of live teammates. It owns the roster's
 * invariants; {@link commit} trusts its caller to have run {@link checkRecord}.
 */
export class Roster {
  private readonly byId = new Map<string, Member>();
  /** Every name ever used, to the member's id. */
  private readonly names = new Map<string, string>();
  private lead: string | undefined;
  private liveTeammates = 0;

  /** The id of the member named `lead`, once it exists. */
  get leadId(): string | undefined {
    return this.lead;
  }

  /** Teammates holding a slot of `maxMembers` (live, lead excluded). */
  get liveTeammateCount(): number {
    return this.liveTeammates;
  }

  /** The stored member (not a copy: callers must not change it). */
  get(id: string): Member | undefined {
    return this.byId.get(id);
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** The id of the member that has (or had) this name. */
  idOf(name: string): string | undefined {
    return this.names.get(name);
  }

  /** True when the member exists and is live. */
  isLive(id: string): boolean {
    const member = this.byId.get(id);
    return member !== undefined && isLivePhase(member.phase);
  }

  /** The stored members (not copies), in the order of their first record. */
  stored(): Member[] {
    return [...this.byId.values()];
  }

  /** Copies of every member ever recorded, lead first, then in spawn order. */
  list(): Member[] {
    const out: Member[] = [];
    const lead = this.lead === undefined ? undefined : this.byId.get(this.lead);
    if (lead !== undefined) out.push({ ...lead });
    for (const member of this.byId.values()) {
      if (member !== lead) out.push({ ...member });
    }
    return out;
  }

  /** A name is used once in a team's whole life (`NAME_TAKEN`), the lead's name included. */
  checkNameFree(name: string): Problem | undefined {
    if (!this.names.has(name)) return undefined;
    return name === LEAD_NAME
      ? {
          code: 'NAME_TAKEN',
          message: `the name "${name}" is already used: the team already has a lead`,
          details: { name, leadId: this.lead },
        }
      : {
          code: 'NAME_TAKEN',
          message: `the name "${name}" is already used in this team; names are never reused`,
          details: { name },
        };
  }

  /** A command never records a new member under a known id (`INVALID_ARGUMENT`). */
  checkIdFree(id: string): Problem | undefined {
    if (!this.byId.has(id)) return undefined;
    return {
      code: 'INVALID_ARGUMENT',
      message: `a member with id ${id} already exists`,
      details: { memberId: id },
    };
  }

  /** Only a live member acts (`NOT_A_MEMBER`). */
  checkActor(actorId: string): Problem | undefined {
    const actor = this.byId.get(actorId);
    if (actor !== undefined && isLivePhase(actor.phase)) return undefined;
    return {
      code: 'NOT_A_MEMBER',
      message: `${String(actorId)} is not a live member of the team`,
      details: { actorId, phase: actor?.phase },
    };
  }

  /**
   * The rules of a member's record sequence: its first record is `provisioning` under an unused
   * name, without a workspace; every later one is a phase transition that keeps the immutable
   * fields; a workspace appears only with the move to `active` and never changes after.
   */
  checkRecord(member: Member): Problem | undefined {
    const previous = this.byId.get(member.id);
    if (previous === undefined) {
      if (member.phase !== 'provisioning') {
        return invariant(
          `member ${member.id} first appears in phase ${member.phase}, not provisioning`,
        );
      }
      if (member.workspace !== undefined) {
        return invariant(`member ${member.id} first appears with a workspace`);
      }
      return this.checkNameFree(member.name);
    }
    const transition = checkPhaseTransition(previous, member.phase);
    if (transition !== undefined) return transition;
    for (const key of IMMUTABLE_FIELDS) {
      if (previous[key] !== member[key]) return invariant(`member ${member.id} changed its ${key}`);
    }
    return checkWorkspaceChange(previous, member);
  }

  /** Stores a checked member record and updates the name index, the lead and the live count. */
  commit(member: Member): void {
    const previous = this.byId.get(member.id);
    const isLead = member.name === LEAD_NAME;
    if (!isLead) {
      if (previous !== undefined && isLivePhase(previous.phase)) this.liveTeammates--;
      if (isLivePhase(member.phase)) this.liveTeammates++;
    }
    this.byId.set(member.id, member);
    this.names.set(member.name, member.id);
    if (isLead) this.lead = member.id;
  }

  /**
   * Fills an empty roster from a snapshot's members (in the order of their first record): ids
   * and names must be unique, and only the member named `lead` can be the lead.
   */
  restore(members: readonly Member[]): Problem | undefined {
    for (const member of members) {
      if (this.byId.has(member.id)) return invariant(`member ${member.id} appears twice`);
      if (this.names.has(member.name)) {
        return invariant(`member name "${member.name}" is used twice`);
      }
      this.commit(member);
    }
    return undefined;
  }

  /**
   * Undoes the commit of `member`, the latest record of its member, which replaced `previous`
   * (`undefined`: it was the member's first record).
   */
  revert(member: Member, previous: Member | undefined): void {
    if (previous !== undefined) {
      this.commit(previous);
      return;
    }
    const isLead = member.name === LEAD_NAME;
    if (!isLead && isLivePhase(member.phase)) this.liveTeammates--;
    this.byId.delete(member.id);
    this.names.delete(member.name);
    if (isLead) this.lead = undefined;
  }
}
