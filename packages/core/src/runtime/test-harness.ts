import { z } from 'zod';
import type { ChatMessage, TranscriptEntry } from '../chat.js';
import { contentText } from '../content.js';
import type { AgentEvent, EventSink } from '../ports/events.js';
import type { TeamLog } from '../ports/team-log.js';
import type { TeamPolicy } from '../ports/team-policy.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import type { WireFormat } from '../ports/wire-format.js';
import type { WorkspaceProvider } from '../ports/workspace.js';
import type { TeamLimits } from '../state/index.js';
import type { ManualClock } from '../testing/manual-clock.js';
import { createManualClock, createSequentialIds } from '../testing/manual-clock.js';
import type { MemoryTeamLog, MemoryTranscriptStore } from '../testing/memory-stores.js';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '../testing/memory-stores.js';
import type { AgentScript, ScriptedModel } from '../testing/scripted-model.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { createSimpleFormat, createSimplePolicy } from '../testing/simple-format.js';
import type { AgentDefinition, AgentRef } from './agents.js';
import { createAgentRegistry, defineTool } from './agents.js';
import { type OpenTeamOptions, openTeam } from './open-team.js';
import type { TeamService } from './service-types.js';

export const TEAM_ID = 'team-1';

/** An EventSink that keeps everything, for assertions. */
export interface RecordingSink extends EventSink {
  readonly events: { agent: string; event: AgentEvent }[];
  errors(): { agent: string; code: string; message: string }[];
  /** Resolves once `condition` holds over all events published so far. */
  waitUntil(
    condition: (events: readonly { agent: string; event: AgentEvent }[]) => boolean,
  ): Promise<void>;
  /** Resolves once `count` events matching `predicate` have been published in total. */
  waitFor(predicate: (agent: string, event: AgentEvent) => boolean, count?: number): Promise<void>;
}

export function createRecordingSink(): RecordingSink {
  const events: { agent: string; event: AgentEvent }[] = [];
  const waiters = new Set<() => void>();
  return {
    events,
    publish(agent, event) {
      events.push({ agent, event });
      for (const check of [...waiters]) check();
    },
    waitUntil(condition) {
      return new Promise<void>((resolve) => {
        const check = () => {
          if (condition(events)) {
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
        check();
      });
    },
    waitFor(predicate, count = 1) {
      return this.waitUntil(
        (all) => all.filter((e) => predicate(e.agent, e.event)).length >= count,
      );
    },
    errors: () =>
      events.flatMap(({ agent, event }) =>
        event.type === 'error' ? [{ agent, code: event.code, message: event.message }] : [],
      ),
  };
}

/** Captured credentials of teammates (filled by the `whoami` tool). */
export type RefBook = Map<string, AgentRef>;

/** A tool that records the caller's credential, so tests can act as a teammate. */
export function whoamiTool(book: RefBook) {
  return defineTool({
    name: 'whoami',
    description: 'Says who you are.',
    inputSchema: z.object({}),
    async execute(_input, { agent }) {
      book.set(agent.name, agent);
      return agent.name;
    },
  });
}

export interface HarnessOptions {
  scripts: Record<string, AgentScript>;
  limits?: Partial<TeamLimits>;
  idleClaim?: boolean;
  /** The memory stores to open over (a new pair by default), e.g. a crashed service's. */
  memory?: { log: MemoryTeamLog; transcripts: MemoryTranscriptStore };
  /** Wraps the ports the service uses (the harness still inspects the memory stores). */
  wrap?: (memory: { log: MemoryTeamLog; transcripts: MemoryTranscriptStore }) => {
    log: TeamLog;
    transcripts: TranscriptStore;
  };
  clock?: ManualClock;
  model?: ScriptedModel;
  workerTools?: AgentDefinition['tools'];
  /** Tools of the lead's agent type (none by default). */
  leadTools?: AgentDefinition['tools'];
  ids?: string;
  /** The team's wire format. Default: `createSimpleFormat()`. */
  format?: WireFormat;
  /** The team's policy. Default: `createSimplePolicy()`; `null` opens without one (core's default). */
  policy?: TeamPolicy | null;
  /** The team's workspace provider (none by default). */
  workspaces?: WorkspaceProvider;
  /** The team's directory (`openTeam`'s default when absent). */
  cwd?: string;
  /**
   * Adds the agent type `coder`: `isolation: 'worktree'`, with the `whoami` tool and these tools.
   * Off by default, so the lead's `spawn_teammate` schema lists only `worker` and `lead`.
   */
  coderTools?: AgentDefinition['tools'];
  /** Adds the external agent type `outside` (members run by a client), off by default. */
  external?: boolean;
  /** `openTeam`'s `externalMembers`. */
  externalMembers?: OpenTeamOptions['externalMembers'];
  /** `openTeam`'s `context` (the team's context budget). */
  context?: OpenTeamOptions['context'];
  /** `openTeam`'s `maxRepeatedFailures`. */
  maxRepeatedFailures?: number;
  /** The `worker` type's approval policy. */
  workerApproval?: AgentDefinition['approval'];
  /** Adds the agent type `planner`: a worker under plan approval, with these tools. */
  plannerTools?: AgentDefinition['tools'];
  /** `openTeam`'s `gates`. */
  gates?: OpenTeamOptions['gates'];
}

export interface Harness {
  service: TeamService;
  model: ScriptedModel;
  log: MemoryTeamLog;
  transcripts: MemoryTranscriptStore;
  clock: ManualClock;
  sink: RecordingSink;
  refs: RefBook;
  /** A member's transcript as compact lines (see {@link describeTranscript}). */
  transcript(name: string): string[];
  memberId(name: string): string;
}

/**
 * Opens a team over in-memory stores with a scripted model, a manual clock and sequential ids.
 * Agent types: `lead` and `worker` (with a `whoami` tool filling `refs`).
 */
export async function openHarness(options: HarnessOptions): Promise<Harness> {
  const clock = options.clock ?? createManualClock();
  const memory = options.memory ?? {
    log: createMemoryTeamLog({ teamId: TEAM_ID }),
    transcripts: createMemoryTranscriptStore(),
  };
  const { log, transcripts } = memory;
  const ports = options.wrap?.(memory) ?? memory;
  const model = options.model ?? createScriptedModel({ scripts: options.scripts });
  if (options.model !== undefined) {
    for (const [name, script] of Object.entries(options.scripts)) model.setScript(name, script);
  }
  const sink = createRecordingSink();
  const refs: RefBook = new Map();
  const agents = createAgentRegistry([
    {
      type: 'lead',
      systemPrompt: 'You lead the team.',
      model,
      ...(options.leadTools === undefined ? {} : { tools: options.leadTools }),
    },
    {
      type: 'worker',
      systemPrompt: 'You are a worker.',
      model,
      tools: [whoamiTool(refs), ...(options.workerTools ?? [])],
      ...(options.workerApproval === undefined ? {} : { approval: options.workerApproval }),
    },
    ...(options.plannerTools === undefined
      ? []
      : [
          {
            type: 'planner',
            systemPrompt: 'You plan, then work.',
            model,
            planApproval: true,
            tools: options.plannerTools,
          },
        ]),
    ...(options.coderTools === undefined
      ? []
      : [
          {
            type: 'coder',
            systemPrompt: 'You write code in your own worktree.',
            model,
            isolation: 'worktree' as const,
            tools: [whoamiTool(refs), ...options.coderTools],
          },
        ]),
    ...(options.external === true
      ? [{ type: 'outside', description: 'A coding agent outside', external: true as const }]
      : []),
  ]);
  const service = await openTeam({
    teamId: TEAM_ID,
    log: ports.log,
    transcripts: ports.transcripts,
    format: options.format ?? createSimpleFormat(),
    policy: options.policy === null ? undefined : (options.policy ?? createSimplePolicy()),
    agents,
    lead: { agentType: 'lead', description: 'Leads the team' },
    events: sink,
    clock,
    ids: createSequentialIds(options.ids ?? 'id'),
    limits: options.limits,
    idleClaim: options.idleClaim,
    externalMembers: options.externalMembers,
    ...(options.context === undefined ? {} : { context: options.context }),
    ...(options.maxRepeatedFailures === undefined
      ? {}
      : { maxRepeatedFailures: options.maxRepeatedFailures }),
    ...(options.workspaces === undefined ? {} : { workspaces: options.workspaces }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.gates === undefined ? {} : { gates: options.gates }),
  });
  const memberId = (name: string): string => {
    const found = service.listMembers(service.lead).find((m) => m.name === name);
    if (found === undefined) throw new Error(`no member ${name}`);
    return found.memberId;
  };
  return {
    service,
    model,
    log,
    transcripts,
    clock,
    sink,
    refs,
    transcript: (name) => describeTranscript(transcripts.raw(memberId(name))),
    memberId,
  };
}

/**
 * Renders a transcript as one line per entry: `user: ...` (team mail shows its envelope),
 * `host: ...`, `claim task-n: ...`, `assistant: text -> tool {input}; ...`, `tool name: result`.
 */
export function describeTranscript(entries: readonly TranscriptEntry[]): string[] {
  return entries.map((entry) => describeMessage(entry.message));
}

export function describeMessage(message: ChatMessage): string {
  switch (message.role) {
    case 'user': {
      const text = contentText(message.content);
      if (message.source?.kind === 'host') return `host: ${text}`;
      if (message.source?.kind === 'task-claim') return `claim ${message.source.taskId}: ${text}`;
      if (message.source?.kind === 'compaction') {
        return `compaction of ${message.source.replaced} after ${message.source.head}: ${text}`;
      }
      return `user: ${text}`;
    }
    case 'assistant': {
      const parts = [contentText(message.content)];
      for (const call of message.toolCalls) {
        parts.push(`-> ${call.name} ${JSON.stringify(call.input)}`);
      }
      return `assistant: ${parts.filter((p) => p !== '').join(' ')}`;
    }
    case 'tool':
      return `tool ${message.toolName}${message.isError ? ' (error)' : ''}: ${contentText(message.content)}`;
  }
}

/** The last message of a request, for scripts that react to what they were sent. */
export function lastMessage(messages: readonly ChatMessage[]): ChatMessage | undefined {
  return messages[messages.length - 1];
}

/** True when the request continues a turn (the last assistant message asked for tools). */
export function continuesTurn(messages: readonly ChatMessage[]): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === 'assistant') return message.toolCalls.length > 0;
  }
  return false;
}

/** A deferred promise, for gates. */
export function deferred<T = void>(): {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A lead that answers every turn with `Noted.`: for tests that drive the team from the host. */
export const notedLead: AgentScript = () => ({ text: 'Noted.' });

/** Spawns a teammate from the host with the lead's credential and waits until the team is idle. */
export async function spawnIdle(h: Harness, name: string, prompt = `Hi ${name}.`): Promise<void> {
  await h.service.spawnTeammate(h.service.lead, {
    name,
    description: `${name} helps`,
    prompt,
    agentType: 'worker',
  });
  await h.service.idle();
}

/** The ids of team messages in a transcript, in order. */
export function messageIdsIn(entries: readonly TranscriptEntry[]): string[] {
  return entries.flatMap((entry) =>
    entry.message.source?.kind === 'team-message' ? [entry.message.source.messageId] : [],
  );
}

/**
 * Stores that simulate a process dying: once `crash()` ran (or `crashAfter` matched an append
 * that then completed), every later append of either store never settles and writes nothing.
 * The underlying memory stores stay readable for the next "process".
 */
export interface CrashableStores {
  log: TeamLog;
  transcripts: TranscriptStore;
  crash(): void;
  /** Resolves when the crash happened. */
  crashed: Promise<void>;
  /** Transcript loads per member id. */
  loads: Map<string, number>;
}

export function crashableStores(
  log: MemoryTeamLog,
  transcripts: MemoryTranscriptStore,
  crashAfter: (append: { memberId: string; entries: readonly TranscriptEntry[] }) => boolean = () =>
    false,
): CrashableStores {
  let dead = false;
  const done = deferred();
  const never = new Promise<void>(() => {});
  const crash = () => {
    dead = true;
    done.resolve();
  };
  const loads = new Map<string, number>();
  return {
    crash,
    crashed: done.promise,
    loads,
    log: {
      specificationVersion: 'v1',
      teamId: log.teamId,
      append: (options) => (dead ? never : log.append(options)),
      read: (options) => log.read(options),
      subscribe: (options) => log.subscribe(options),
      lastSeq: () => log.lastSeq(),
      close: () => log.close(),
    },
    transcripts: {
      specificationVersion: 'v1',
      async append(options) {
        if (dead) return never;
        await transcripts.append(options);
        if (crashAfter(options)) crash();
      },
      load(options) {
        loads.set(options.memberId, (loads.get(options.memberId) ?? 0) + 1);
        return transcripts.load(options);
      },
      close: () => transcripts.close(),
    },
  };
}
