import { type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import {
  Backoff,
  type ExternalAgentDefinition,
  type InboxMessage,
  type MemberInfo,
  TeamError,
  type TeamLog,
  type TeamService,
} from '@teamwire/core';

/** A remote A2A agent the team can spawn as a teammate; see {@link remoteAgentType}. */
export interface RemoteA2AAgent {
  /** The agent type the lead spawns it as. */
  type: string;
  /** The URL of the remote's Agent Card (e.g. `https://host/.well-known/agent-card.json`). */
  cardUrl: string;
  /** What the lead reads about it (default: the type and the card URL). */
  description?: string | undefined;
  /**
   * Headers sent with every request to the remote (its credentials). Only the bridge holds them:
   * they never reach a model, the mail or a transcript.
   */
  headers?: Readonly<Record<string, string>> | undefined;
}

/** The external agent type of a remote A2A agent: register it in the team's agents. */
export function remoteAgentType(agent: RemoteA2AAgent): ExternalAgentDefinition {
  return {
    type: agent.type,
    description:
      agent.description ??
      `A remote A2A agent (${new URL(agent.cardUrl).origin}). Message it; its answers come back as mail.`,
    external: true,
  };
}

/** How a bridge retries a remote that is down: the waits, and how many attempts at most. */
export interface A2ABridgeRetry {
  /** The first wait, in ms; each next one doubles. */
  initialDelayMs: number;
  /** The longest wait, in ms. */
  maxDelayMs: number;
  /** Attempts to send one message before the member fails (default 8). */
  maxAttempts: number;
}

/** Default of {@link A2ABridgeOptions.retry}: 0.5 s doubling to 30 s, 8 attempts. */
export const A2A_BRIDGE_RETRY_DEFAULT: A2ABridgeRetry = Object.freeze({
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  maxAttempts: 8,
});

/** Options of {@link startA2ABridge}. */
export interface A2ABridgeOptions {
  /** The team, opened in this process with the remote types registered and its external members served here. */
  team: TeamService;
  /** The remote agents, by type. */
  agents: readonly RemoteA2AAgent[];
  /**
   * The team's log: on start, answers already recorded for mail a crash left unacknowledged are
   * found in it, so they are not asked for again. Without it, such mail is sent again.
   */
  log?: Pick<TeamLog, 'read'> | undefined;
  /** Retries of a remote that is down (default {@link A2A_BRIDGE_RETRY_DEFAULT}). */
  retry?: A2ABridgeRetry | undefined;
  /** Waits `ms` (default a timer); ends early when `signal` aborts. For tests. */
  sleep?: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
}

/** A running bridge; see {@link startA2ABridge}. */
export interface A2ABridge {
  /** Starts pumping members spawned since (the bridge also notices spawns itself). */
  refresh(): void;
  /** Resolves once every member's pump has nothing to send and nothing in flight. */
  settled(): Promise<void>;
  /** Stops the pumps (an in-flight request is aborted; its mail stays unacknowledged). */
  close(): Promise<void>;
}

const KINDS = ['message', 'task_assignment', 'shutdown_request'] as const;
const SUMMARY = /^a2a-(answer|question|failure):(\S+)$/;

function textOf(parts: Message['parts'] | undefined): string {
  return (parts ?? [])
    .map((p) =>
      p.content?.$case === 'text'
        ? p.content.value
        : p.content?.$case === 'data'
          ? JSON.stringify(p.content.value)
          : '',
    )
    .filter((t) => t !== '')
    .join('\n');
}

function answerOf(task: Task): string {
  const artifacts = task.artifacts.map((a) => textOf(a.parts)).filter((t) => t !== '');
  if (artifacts.length > 0) return artifacts.join('\n\n');
  return textOf(task.status?.message?.parts) || '(no text)';
}

const settledStates = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

const defaultSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/**
 * Runs remote A2A agents as teammates. For each live member of a remote type, its mail is read in
 * order and sent to the remote as an A2A message whose `messageId` is the team message id (so a
 * resend after a crash is the same message to an idempotent remote), in one A2A context per member,
 * streamed when the card allows. The mail is acknowledged only after the remote answered, and the
 * answer is mail from the member to the lead (summary `a2a-answer:<id>`; `a2a-question:<id>` when
 * the remote asks back, the lead's next mail to the member then continuing that A2A task).
 *
 * A remote that does not answer is retried with core's `Backoff`; past `maxAttempts` the
 * member tells the lead why (summary `a2a-failure:<id>`), and the lead's credential shuts it down:
 * it retires, its tasks go back to the board and its unsent mail is dead-lettered.
 */
export function startA2ABridge(options: A2ABridgeOptions): A2ABridge {
  const { team } = options;
  const retry = options.retry ?? A2A_BRIDGE_RETRY_DEFAULT;
  const sleep = options.sleep ?? defaultSleep;
  const byType = new Map(options.agents.map((a) => [a.type, a]));
  const abort = new AbortController();
  const pumps = new Map<string, { wake(): void; idle(): Promise<void> }>();
  const answered = new Set<string>();
  const clients = new Map<string, Promise<Client>>();
  let scanned: Promise<void> | undefined;

  const scan = () => {
    scanned ??= (async () => {
      if (options.log === undefined) return;
      for await (const record of options.log.read({ signal: abort.signal })) {
        if (record.type !== 'message.queued') continue;
        const key = SUMMARY.exec(record.message.summary ?? '')?.[2];
        if (key !== undefined) answered.add(key);
      }
    })();
    return scanned;
  };

  const clientFor = (agent: RemoteA2AAgent) => {
    let client = clients.get(agent.type);
    if (client === undefined) {
      const headers = agent.headers ?? {};
      const fetchImpl: typeof fetch = (input, init) => {
        const merged = new Headers(init?.headers);
        for (const [k, v] of Object.entries(headers)) merged.set(k, v);
        return fetch(input, { ...init, headers: merged, signal: init?.signal ?? abort.signal });
      };
      const factory = new ClientFactory({
        transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
      });
      const url = new URL(agent.cardUrl);
      client = factory.createFromUrl(url.origin, url.pathname);
      // a failed card fetch is retried on the next attempt
      client.catch(() => clients.delete(agent.type));
      clients.set(agent.type, client);
    }
    return client;
  };

  /** One A2A exchange: the remote's task once it settles (input-required counts). */
  const exchange = async (agent: RemoteA2AAgent, message: Message): Promise<Task> => {
    const client = await clientFor(agent);
    const request = {
      tenant: '',
      message,
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: undefined,
        returnImmediately: false,
      },
      metadata: undefined,
    };
    const card = await client.getAgentCard({ signal: abort.signal });
    if (card.capabilities?.streaming === true) {
      let task: Task | undefined;
      for await (const event of client.sendMessageStream(request, { signal: abort.signal })) {
        const p = event.payload;
        if (p?.$case === 'task') task = p.value;
        else if (p?.$case === 'message') return messageTask(p.value);
        else if (p?.$case === 'statusUpdate' && task !== undefined)
          task = { ...task, status: p.value.status };
        else if (
          p?.$case === 'artifactUpdate' &&
          task !== undefined &&
          p.value.artifact !== undefined
        )
          task = { ...task, artifacts: [...task.artifacts, p.value.artifact] };
      }
      if (task === undefined) throw new TeamError('INVALID_RECORD', 'the remote streamed no task');
      return task;
    }
    const result = await client.sendMessage(request, { signal: abort.signal });
    if ('messageId' in result) return messageTask(result as Message);
    let task = result as Task;
    const waits = new Backoff({ initialDelayMs: 200, maxDelayMs: 5000 });
    while (!settledStates.has(task.status?.state ?? TaskState.TASK_STATE_WORKING)) {
      await sleep(waits.next(), abort.signal);
      if (abort.signal.aborted) throw new TeamError('ABORTED', 'the bridge closed');
      task = await client.getTask({ tenant: '', id: task.id }, { signal: abort.signal });
    }
    return task;
  };

  const messageTask = (m: Message): Task => ({
    id: '',
    contextId: m.contextId,
    status: { state: TaskState.TASK_STATE_COMPLETED, message: m, timestamp: undefined },
    artifacts: [],
    history: [],
    metadata: undefined,
  });

  const pump = (member: MemberInfo, agent: RemoteA2AAgent) => {
    let waking: (() => void) | undefined;
    let rang = true;
    let busy = true;
    const idleWaiters: (() => void)[] = [];
    /** The remote task waiting for the lead's answer (input-required), if any. */
    let openTask: { id: string; contextId: string } | undefined;
    const contextId = `${team.teamId}:${member.name}`;
    const ref = () => team.externalMember(member.name);
    const unwatch = team.watchInbox(ref(), () => {
      rang = true;
      waking?.();
    });
    const lead = () => team.listMembers(team.lead).find((m) => m.isLead)?.name ?? 'lead';
    const handle = async (mail: InboxMessage): Promise<'ok' | 'failed'> => {
      if (answered.has(mail.id)) return 'ok';
      const message: Message = {
        messageId: mail.id,
        contextId: openTask?.contextId ?? contextId,
        taskId: openTask?.id ?? '',
        role: Role.ROLE_USER,
        parts: [
          {
            content: { $case: 'text', value: mail.text },
            metadata: undefined,
            filename: '',
            mediaType: 'text/plain',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      };
      const waits = new Backoff(retry);
      let lastError: unknown;
      for (let attempt = 1; attempt <= retry.maxAttempts; attempt++) {
        if (abort.signal.aborted) throw new TeamError('ABORTED', 'the bridge closed');
        try {
          const task = await exchange(agent, message);
          const state = task.status?.state;
          const asks = state === TaskState.TASK_STATE_INPUT_REQUIRED;
          openTask = asks ? { id: task.id, contextId: task.contextId } : undefined;
          const failed =
            state === TaskState.TASK_STATE_FAILED || state === TaskState.TASK_STATE_REJECTED;
          const text = asks
            ? `${member.name} asks: ${textOf(task.status?.message?.parts) || answerOf(task)}`
            : failed
              ? `${member.name} failed the request: ${textOf(task.status?.message?.parts) || '(no reason)'}`
              : answerOf(task);
          await team.sendMessage(ref(), {
            to: lead(),
            text,
            summary: `a2a-${asks ? 'question' : 'answer'}:${mail.id}`,
          });
          answered.add(mail.id);
          return 'ok';
        } catch (error) {
          if (abort.signal.aborted) throw error;
          lastError = error;
          if (attempt < retry.maxAttempts) await sleep(waits.next(), abort.signal);
        }
      }
      const why = lastError instanceof Error ? lastError.message : String(lastError);
      await team.sendMessage(ref(), {
        to: lead(),
        text: `${member.name} failed: the remote A2A agent at ${agent.cardUrl} did not answer after ${retry.maxAttempts} attempts (${why.slice(0, 500)}). It is shut down; its tasks go back to the board.`,
        summary: `a2a-failure:${mail.id}`,
      });
      answered.add(mail.id);
      await team.shutdown(team.lead, {
        target: member.name,
        reason: 'remote A2A agent unreachable',
      });
      return 'failed';
    };
    const run = async () => {
      try {
        await scan();
        while (!abort.signal.aborted) {
          if (!rang) {
            busy = false;
            for (const w of idleWaiters.splice(0)) w();
            await new Promise<void>((resolve) => (waking = resolve));
            busy = true;
            continue;
          }
          rang = false;
          let page = await team.readInbox(ref(), { limit: 1, kinds: [...KINDS] });
          while (page.cursor !== undefined && !abort.signal.aborted) {
            const mail = page.messages[0] as InboxMessage;
            if (mail.kind !== 'shutdown_request') {
              const outcome = await handle(mail);
              if (outcome === 'failed') rang = true;
            }
            // acknowledged only now: the remote answered and the answer is team mail
            const acked = await team.ackInbox(ref(), { cursor: page.cursor });
            if (acked.retired) return;
            page = await team.readInbox(ref(), { limit: 1, kinds: [...KINDS] });
          }
        }
      } catch {
        // closing, or the member retired
      } finally {
        busy = false;
        unwatch();
        pumps.delete(member.name);
        for (const w of idleWaiters.splice(0)) w();
      }
    };
    void run();
    return {
      wake: () => {
        rang = true;
        waking?.();
      },
      idle: () =>
        busy || rang
          ? new Promise<void>((resolve) => idleWaiters.push(resolve))
          : Promise.resolve(),
    };
  };

  const refresh = () => {
    if (abort.signal.aborted) return;
    for (const member of team.listMembers(team.lead)) {
      const agent = byType.get(member.agentType);
      if (agent === undefined || member.phase !== 'active' || pumps.has(member.name)) continue;
      try {
        pumps.set(member.name, pump(member, agent));
      } catch {
        // not placed here, or not live: another process serves it
      }
    }
  };

  // notice spawns: every change of the team may be a new member
  void (async () => {
    while (!abort.signal.aborted) {
      try {
        const change = await team.waitForChange(team.lead, {
          timeoutMs: 60_000,
          signal: abort.signal,
        });
        if (change.records.some((r) => r.type === 'member')) refresh();
      } catch {
        return;
      }
    }
  })();
  refresh();

  return {
    refresh,
    async settled() {
      for (;;) {
        const open = [...pumps.values()];
        await Promise.all(open.map((p) => p.idle()));
        if ([...pumps.values()].every((p) => open.includes(p))) return;
      }
    },
    async close() {
      abort.abort();
      for (const p of pumps.values()) p.wake();
      await Promise.resolve();
    },
  };
}
