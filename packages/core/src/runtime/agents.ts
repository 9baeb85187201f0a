import type { z } from 'zod';
import { TeamError } from '../errors.js';
import { AGENT_TYPE_MAX, isWithinTextLimit } from '../limits.js';
import { checkCapabilities } from '../placement/eligibility.js';
import type { ModelAdapter } from '../ports/model.js';
import { type ContextBudget, resolveContextBudget } from './context-budget.js';
import type { AgentRef, MemberTeamService } from './service-types.js';

export type { AgentRef } from './service-types.js';

/**
 * What a tool runs with: who calls it, its view of the team, the directory it works in, and the
 * turn's abort signal.
 */
export interface ToolContext {
  /** The calling member's credential (the same as `team.agent`). */
  agent: AgentRef;
  /**
   * The team bound to the calling member: it acts only as that member and cannot reach the lead's
   * credential or the host-only operations of the `TeamService`.
   */
  team: MemberTeamService;
  /**
   * The calling member's working directory (absolute): its own workspace when its agent type asks
   * for `isolation: 'worktree'`, else the team's directory (`openTeam`'s `cwd`; the lead's always).
   * One tool instance serves every member, so a file or shell tool resolves paths against this,
   * never against `process.cwd()`.
   */
  cwd: string;
  /** Aborted when the turn is interrupted or the service is disposed. */
  signal: AbortSignal;
}

/**
 * A tool a model may call. The input is validated with `inputSchema` before `execute` runs (a
 * failure goes back to the model as an `INVALID_ARGUMENT` tool error); the result is shown to the
 * model as compact JSON (a string as-is). A thrown `TeamError` goes back as a tool error carrying
 * its code; anything else thrown becomes `TOOL_FAILED`. Nothing a tool throws ends the turn.
 */
export interface AgentTool<I = unknown> {
  /** The name the model calls the tool by; unique among an agent's tools. */
  name: string;
  /** What the tool does and when to use it, for the model. */
  description: string;
  /** Validates the model's arguments; also sent to the model as JSON Schema. */
  inputSchema: z.ZodType<I>;
  /** Runs the tool for the calling member, whose own service is in `context`. */
  execute(input: I, context: ToolContext): Promise<unknown>;
  /**
   * Whether a call needs approval before it runs: `true` for every call, or a predicate on the
   * (validated) input. Such a call is recorded as a pending approval and the member parks until
   * its approver decides (see {@link AgentDefinition.approval} for who and how long).
   */
  needsApproval?: boolean | ((input: I) => boolean);
  /**
   * The tool changes nothing (it only reads): a teammate under plan approval keeps it while its
   * plan is not yet approved.
   */
  readOnly?: boolean;
}

/** A tool call as an approval predicate sees it. */
export interface ApprovalCall {
  /** The tool called. */
  name: string;
  /** The model's input, as given (not yet validated). */
  input: unknown;
}

/** Which calls of an agent type need approval, who decides, and for how long a request waits. */
export interface ApprovalPolicy {
  /**
   * The calls that need approval besides those of tools marked `needsApproval`: tool names, or a
   * predicate on the call.
   */
  tools?: readonly string[] | ((call: ApprovalCall) => boolean);
  /**
   * Who decides: a member's name (the dashboard's `operator`, an external lead, ...), `host` for
   * the host API alone (`TeamService.decide`), or `lead` (the default). The member named must be
   * live when the call is made, else the lead decides.
   */
  approver?: string;
  /** A request left undecided this long is rejected as `expired` (default: never). */
  expiresInMs?: number;
}

/** Keeps the input type of a tool literal `execute` checked against its schema. */
export function defineTool<I>(tool: AgentTool<I>): AgentTool<I> {
  return tool;
}

/**
 * An agent type: what `spawn_teammate` and the waker build a member from. Members store only the
 * type name, so a revived member runs with the definition registered now.
 */
export interface AgentDefinition {
  /** The type name members store; unique in a registry. */
  type: string;
  /** What members of this type are for, shown to the lead when it picks a type. */
  description?: string;
  /**
   * The stable prefix of the system prompt (sent as a cacheable block). For teammates the
   * protocol's team-context text follows it as a second block.
   */
  systemPrompt: string;
  /** The model members of this type run on. */
  model: ModelAdapter;
  /** Tools offered besides the team tools. */
  // biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of many input types
  tools?: readonly AgentTool<any>[];
  /**
   * `worktree`: each member of this type works in a directory of its own, from the team's
   * `WorkspaceProvider` (fail-closed: without one, or when it refuses, the member fails and never
   * runs in the shared directory). `shared` (the default): members work in the team's directory.
   */
  isolation?: 'shared' | 'worktree';
  /** Steps per turn; overrides the team's `maxSteps`. */
  maxSteps?: number;
  /**
   * The context budget of members of this type (the model's window, the share to stay under, the
   * summary policy); overrides `openTeam`'s `context`. Checked when the registry is built.
   */
  context?: ContextBudget;
  /**
   * Tool calls that need approval (with the tools' own `needsApproval`), who decides them and for
   * how long they wait. A call needing approval parks the member, with no model call open, until
   * the decision: approved, it runs (once); rejected or expired, the reason is its result.
   */
  approval?: ApprovalPolicy;
  /**
   * Members of this type start in plan mode: only `readOnly` tools, the team's reading tools,
   * `send_message` and `submit_plan`, until the lead (or the approval policy's approver) approves
   * a plan; a rejected plan comes back with feedback to revise.
   */
  planApproval?: boolean;
  /**
   * Where members of this type may run in a team spread over processes: only on a process that
   * has every capability in `requires` (e.g. `credential:anthropic`, `label:gpu`; see
   * `PLACEMENT_CAPABILITY_PATTERN`), which also is the only kind of process that takes one over.
   * Checked when the registry is built. A type with `isolation: 'worktree'` requires its
   * workspace provider's capability as well, without listing it here.
   */
  placement?: AgentPlacement;
  /** Never set on a model-run type; see {@link ExternalAgentDefinition}. */
  external?: undefined;
}

/** What an agent type needs of the process that runs its members. */
export interface AgentPlacement {
  /** Capabilities the process must have, at most `PLACEMENT_CAPABILITIES_MAX`. */
  requires?: readonly string[];
}

/**
 * An agent type whose members run outside teamwire: an MCP client such as a coding agent joins
 * the team as such a member (see `@teamwire/mcp`). teamwire runs no model and no runner for it;
 * its turns happen in the client, which reads its inbox with a cursor and acknowledges what it
 * handled (`TeamService.readInbox` / `ackInbox`), so its mail keeps the same exactly-once
 * contract as a model-run teammate's. The lead spawns one like any teammate: its prompt is the
 * first message of its inbox.
 */
export interface ExternalAgentDefinition {
  /** The type name members store; unique in a registry. */
  type: string;
  /** What members of this type are for, shown to the lead when it picks a type. */
  description?: string;
  /** Marks the type as external. */
  external: true;
}

/** A registered agent type: run by teamwire on a model, or external (run by a client). */
export type AnyAgentDefinition = AgentDefinition | ExternalAgentDefinition;

/** Agent definitions by type. */
export interface AgentRegistry {
  /** The definition of `type`; `UNKNOWN_AGENT_TYPE` when none is registered. */
  get(type: string): AnyAgentDefinition;
  /**
   * The definition of a model-run `type`: `UNKNOWN_AGENT_TYPE` when none is registered,
   * `EXTERNAL_MEMBER` when the type is external.
   */
  model(type: string): AgentDefinition;
  /** Whether `type` is registered as external (false when unknown). */
  isExternal(type: string): boolean;
  /** Whether `type` is registered. */
  has(type: string): boolean;
  /** The registered type names, in registration order. */
  types(): string[];
}

/**
 * Builds a registry from definitions. Types must be unique and tool names unique within a
 * definition (`INVALID_ARGUMENT`), so a misconfiguration fails at start-up, not mid-turn.
 */
export function createAgentRegistry(definitions: readonly AnyAgentDefinition[]): AgentRegistry {
  const byType = new Map<string, AnyAgentDefinition>();
  for (const definition of definitions) {
    if (
      typeof definition.type !== 'string' ||
      definition.type === '' ||
      !isWithinTextLimit(definition.type, AGENT_TYPE_MAX)
    ) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `an agent definition needs a type of 1 to ${AGENT_TYPE_MAX} characters`,
        { details: { field: 'type', max: AGENT_TYPE_MAX } },
      );
    }
    if (byType.has(definition.type)) {
      throw new TeamError('INVALID_ARGUMENT', `agent type "${definition.type}" is defined twice`, {
        details: { type: definition.type },
      });
    }
    const names = new Set<string>();
    for (const tool of definition.external === true ? [] : (definition.tools ?? [])) {
      if (names.has(tool.name)) {
        throw new TeamError(
          'INVALID_ARGUMENT',
          `agent type "${definition.type}" defines tool "${tool.name}" twice`,
          { details: { type: definition.type, tool: tool.name } },
        );
      }
      names.add(tool.name);
    }
    if (definition.external !== true && definition.context !== undefined) {
      resolveContextBudget(definition.context, `agent type "${definition.type}"`);
    }
    if (definition.external !== true && definition.placement !== undefined) {
      checkPlacement(definition.placement, definition.type);
    }
    byType.set(definition.type, definition);
  }
  const get = (type: string): AnyAgentDefinition => {
    const definition = byType.get(type);
    if (definition === undefined) {
      throw new TeamError(
        'UNKNOWN_AGENT_TYPE',
        `no agent type "${type}" is registered (known: ${[...byType.keys()].join(', ') || 'none'})`,
        { details: { type } },
      );
    }
    return definition;
  };
  return {
    get,
    model(type) {
      const definition = get(type);
      if (definition.external === true) {
        throw new TeamError(
          'EXTERNAL_MEMBER',
          `agent type "${type}" is external: its members run in a client, not on a model`,
          { details: { type } },
        );
      }
      return definition;
    },
    isExternal: (type) => byType.get(type)?.external === true,
    has: (type) => byType.has(type),
    types: () => [...byType.keys()],
  };
}

/** Refuses an agent type's `placement` that is not `{ requires?: capabilities }`. */
function checkPlacement(placement: unknown, type: string): void {
  const what = `agent type "${type}" placement.requires`;
  if (typeof placement !== 'object' || placement === null || Array.isArray(placement)) {
    throw new TeamError('INVALID_ARGUMENT', `agent type "${type}": placement must be an object`, {
      details: { type, field: 'placement' },
    });
  }
  const requires = (placement as { requires?: unknown }).requires;
  if (requires !== undefined) checkCapabilities(requires, what);
}

/** The capabilities an agent type's `placement.requires` lists (none for an external type). */
export function requiredCapabilities(definition: AnyAgentDefinition): readonly string[] {
  if (definition.external === true) return [];
  return definition.placement?.requires ?? [];
}

/**
 * The `provider` a member record stores for a definition: `<provider>:<modelId>` of its model, or
 * `external` for an external type.
 */
export function providerOf(definition: AnyAgentDefinition): string {
  if (definition.external === true) return 'external';
  return `${definition.model.provider}:${definition.model.modelId}`;
}
