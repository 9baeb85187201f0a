import { stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type AgentDefinition,
  type AgentRegistry,
  type AnyAgentDefinition,
  createAgentRegistry,
  type Member,
  type ModelAdapter,
  TeamError,
  type TeamPolicy,
  type WireFormat,
} from '@teamwire/core';
import { jsonFormat, toolCallFormat, xmlFormat } from '@teamwire/protocol';
import { type ParsedValues, stringOption, usageError } from './args.js';
import type { TeamSource } from './team-source.js';

/**
 * What an `--agents <module>` file exports as its default export: the agent types of your team
 * (the same definitions your own program opens the team with), and the team's wire format and
 * policy when they are not the defaults.
 *
 * ```js
 * // agents.mjs
 * import { defineAgents } from '@teamwire/cli';
 * export default defineAgents({
 *   agents: [{ type: 'reviewer', systemPrompt: 'You review code.', model }],
 * });
 * ```
 */
export interface TeamwireAgents {
  /** The agent types the command may run members of (model-run or external). */
  agents: readonly AnyAgentDefinition[];
  /** The team's wire format (default: the one `--format` names, else `xmlFormat`). */
  format?: WireFormat | undefined;
  /** The team's policy (default: core's `defaultTeamPolicy`). */
  policy?: TeamPolicy | undefined;
}

/** Types an `--agents` module's default export; returns it unchanged. */
export function defineAgents(agents: TeamwireAgents): TeamwireAgents {
  return agents;
}

/** The wire formats `--format` names. */
export const FORMATS: Readonly<Record<string, WireFormat>> = {
  xml: xmlFormat,
  json: jsonFormat,
  'tool-call': toolCallFormat,
};

/** The wire format of `--format` (default xml). */
export function formatOption(name: string | undefined): WireFormat {
  if (name === undefined) return xmlFormat;
  const format = FORMATS[name];
  if (format === undefined) {
    throw usageError(`--format must be one of ${Object.keys(FORMATS).join(', ')} (got ${name})`);
  }
  return format;
}

/** Loads an `--agents` module (a path resolved against `cwd`) and checks its default export. */
export async function loadAgentsModule(file: string, cwd: string): Promise<TeamwireAgents> {
  const absolute = path.resolve(cwd, file);
  try {
    if (!(await stat(absolute)).isFile()) throw new Error('not a file');
  } catch {
    throw usageError(`--agents: no module file at ${absolute}`);
  }
  let loaded: { default?: unknown };
  try {
    loaded = (await import(pathToFileURL(absolute).href)) as { default?: unknown };
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new TeamError('INVALID_ARGUMENT', `--agents: loading ${absolute} failed: ${message}`, {
      cause: error,
    });
  }
  const exported = loaded.default as Partial<TeamwireAgents> | undefined;
  if (
    typeof exported !== 'object' ||
    exported === null ||
    !Array.isArray(exported.agents) ||
    exported.agents.length === 0
  ) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `--agents: ${absolute} must export by default { agents: [agent definitions, ...] } (see defineAgents)`,
    );
  }
  // the registry checks every definition (types unique, tools unique, budgets valid)
  createAgentRegistry(exported.agents);
  return exported as TeamwireAgents;
}

/**
 * A model for an agent type this process only knows by name (from the roster): its members run
 * in another process, or in your own program. Placement never runs them here, so it is never
 * called; if it were, the member's turn fails with this error instead of running a wrong model.
 */
function elsewhereModel(type: string): ModelAdapter {
  return {
    specificationVersion: 'v1',
    provider: 'elsewhere',
    modelId: type,
    // biome-ignore lint/correctness/useYield: it refuses before it yields anything
    async *stream() {
      throw new TeamError(
        'UNKNOWN_AGENT_TYPE',
        `agent type "${type}" is not defined in this process (give --agents)`,
      );
    },
  };
}

/** The registry a command opens a team with, and which agent types it runs here. */
export interface TeamAgents {
  registry: AgentRegistry;
  /** Model-run types defined by the `--agents` module (members of these may run here). */
  runnable: ReadonlySet<string>;
}

/**
 * The agent registry for opening an existing team: the module's definitions, plus every type the
 * roster names that the module does not define (external ones as external, model-run ones as
 * types this process never runs), so opening and revival never meet an unknown type.
 */
export function teamAgents(roster: readonly Member[], module?: TeamwireAgents): TeamAgents {
  const definitions: AnyAgentDefinition[] = [...(module?.agents ?? [])];
  const defined = new Set(definitions.map((d) => d.type));
  const runnable = new Set(
    definitions.filter((d) => d.external !== true).map((d: AnyAgentDefinition) => d.type),
  );
  for (const member of roster) {
    if (defined.has(member.agentType)) continue;
    defined.add(member.agentType);
    if (member.provider === 'external') {
      definitions.push({ type: member.agentType, external: true });
    } else {
      const placeholder: AgentDefinition = {
        type: member.agentType,
        systemPrompt: '',
        model: elsewhereModel(member.agentType),
      };
      definitions.push(placeholder);
    }
  }
  return { registry: createAgentRegistry(definitions), runnable };
}

/**
 * `--agents` and `--format` of a command that opens a team here: the module (JSONL only: with
 * `--store`, model members run in `teamwire worker`) and the wire format, the module's unless
 * `--format` names one.
 */
export async function agentsAndFormat(
  values: ParsedValues,
  source: TeamSource,
  cwd: string,
): Promise<{ module: TeamwireAgents | undefined; format: WireFormat }> {
  const agentsFile = stringOption(values, 'agents');
  if (agentsFile !== undefined && source.kind === 'postgres') {
    throw usageError(
      '--agents goes with --dir: with --store, run model members with teamwire worker',
    );
  }
  const formatName = stringOption(values, 'format');
  const module = agentsFile === undefined ? undefined : await loadAgentsModule(agentsFile, cwd);
  const format =
    formatName === undefined && module?.format !== undefined
      ? module.format
      : formatOption(formatName);
  return { module, format };
}
