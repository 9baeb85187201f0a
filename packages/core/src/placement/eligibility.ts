import { TeamError } from '../errors.js';
import {
  PLACEMENT_CAPABILITIES_MAX,
  PLACEMENT_CAPABILITY_MAX_BYTES,
  PLACEMENT_CAPABILITY_PATTERN,
  utf8Length,
} from '../limits.js';
import type { PlacementCandidate } from '../ports/placement.js';

/**
 * What a process of a team spread over processes can host: the lead or not, the agent types of
 * the teammates it may run, and the capabilities it has (see {@link PLACEMENT_CAPABILITY_PATTERN}).
 */
export interface PlacementHost {
  /** Whether the process may run the team's lead. */
  readonly lead: boolean;
  /** The agent types of teammates it may run, or `'all'`. */
  readonly agentTypes: readonly string[] | 'all';
  /** What it has that a member may need: `repo:<name>`, `credential:<provider>`, `label:<name>`. */
  readonly capabilities: readonly string[];
}

/**
 * The capabilities a candidate requires that `host` lacks, in the candidate's order; empty when
 * the host has every one.
 */
export function missingCapabilities(host: PlacementHost, candidate: PlacementCandidate): string[] {
  const requires = candidate.requires ?? [];
  if (requires.length === 0) return [];
  const has = new Set(host.capabilities);
  return requires.filter((capability) => !has.has(capability));
}

/**
 * Whether `host` is willing to run `candidate` by role and type alone: the lead where lead is
 * allowed, a teammate where its agent type is listed (or every type is).
 */
export function willingToRun(host: PlacementHost, candidate: PlacementCandidate): boolean {
  if (candidate.isLead) return host.lead;
  return host.agentTypes === 'all' || host.agentTypes.includes(candidate.agentType);
}

/**
 * The placement rule: a process may run (and take over) a candidate when it is willing to run it
 * ({@link willingToRun}) and has every capability the candidate requires. A pinned candidate (an
 * external member whose client connects to this process) is hosted where it is pinned, whatever
 * its type; the caller decides which process that is.
 */
export function canHost(host: PlacementHost, candidate: PlacementCandidate): boolean {
  return willingToRun(host, candidate) && missingCapabilities(host, candidate).length === 0;
}

/**
 * Why no live process can host a candidate, when none can: the capabilities that no process
 * willing to run it has (empty when no process is willing at all, or when some can host it).
 * Each capability is named once, in the candidate's order.
 */
export function unmetRequirements(
  hosts: readonly PlacementHost[],
  candidate: PlacementCandidate,
): string[] {
  const willing = hosts.filter((host) => willingToRun(host, candidate));
  if (willing.length === 0) return [];
  if (willing.some((host) => canHost(host, candidate))) return [];
  const missing = new Set<string>();
  for (const host of willing) {
    for (const capability of missingCapabilities(host, candidate)) missing.add(capability);
  }
  return (candidate.requires ?? []).filter((capability) => missing.has(capability));
}

/**
 * Checks a list of placement capabilities from outside (a process's options, an agent type's
 * requirements): an array of at most {@link PLACEMENT_CAPABILITIES_MAX} strings, each matching
 * {@link PLACEMENT_CAPABILITY_PATTERN} within {@link PLACEMENT_CAPABILITY_MAX_BYTES} bytes.
 * Returns them without duplicates, in their order. Anything else is refused with
 * `INVALID_ARGUMENT` (`details.field` names `what`).
 */
export function checkCapabilities(value: unknown, what: string): string[] {
  if (!Array.isArray(value)) {
    throw new TeamError('INVALID_ARGUMENT', `${what} must be an array of capabilities`, {
      details: { field: what },
    });
  }
  if (value.length > PLACEMENT_CAPABILITIES_MAX) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${what} lists ${value.length} capabilities; at most ${PLACEMENT_CAPABILITIES_MAX} are allowed`,
      { details: { field: what, count: value.length, max: PLACEMENT_CAPABILITIES_MAX } },
    );
  }
  const out: string[] = [];
  for (const capability of value) {
    checkCapability(capability, what);
    if (!out.includes(capability)) out.push(capability);
  }
  return out;
}

/** Refuses one capability that is not a short `kind:name` string (see {@link checkCapabilities}). */
export function checkCapability(value: unknown, what: string): asserts value is string {
  if (
    typeof value !== 'string' ||
    value.length > PLACEMENT_CAPABILITY_MAX_BYTES ||
    utf8Length(value) > PLACEMENT_CAPABILITY_MAX_BYTES ||
    !PLACEMENT_CAPABILITY_PATTERN.test(value)
  ) {
    const shown = typeof value === 'string' ? value.slice(0, 80) : typeof value;
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${what}: a capability is kind:name (e.g. repo:app, label:gpu) of at most ${PLACEMENT_CAPABILITY_MAX_BYTES} bytes matching ${PLACEMENT_CAPABILITY_PATTERN}, got ${JSON.stringify(shown)}`,
      { details: { field: what, capability: shown, max: PLACEMENT_CAPABILITY_MAX_BYTES } },
    );
  }
}
