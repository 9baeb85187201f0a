import { createHash } from 'node:crypto';
import {
  AgentCard,
  type AgentSkill,
  type Artifact,
  type Message,
  type Part,
  Role,
  type StreamResponse,
  type Task,
  TaskState,
} from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import {
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import {
  type A2ARequestHandler,
  defaultServerCallContextBuilder,
  JsonRpcTransportHandler,
  UnauthenticatedUser,
} from '@a2a-js/sdk/server';
import {
  type AgentRegistry,
  describeTeamChange,
  type ExternalAgentDefinition,
  type InboxMessage,
  TeamError,
  type TeamLog,
  type TeamService,
} from '@teamwire/core';
import {
  A2A_ID_MAX,
  type A2ATaskState,
  type A2ATaskStore,
  type StoredA2ATask,
} from './task-store.js';

export { A2A_ID_MAX };

/** The agent type of the team's A2A clients: register it in the team's agents to serve A2A. */
export const A2A_CLIENT_AGENT: ExternalAgentDefinition = {
  type: 'a2a-client',
  description:
    'An A2A client outside the team. Answer it with send_message; a summary "input-required" asks it back, "working" reports progress, any other answer completes its task.',
  external: true,
};

/** Where the edge serves A2A's JSON-RPC. */
export const A2A_PATH = '/a2a';
/** Where the Agent Card is served (A2A's well-known path). */
export const AGENT_CARD_PATH = '/.well-known/agent-card.json';
/** Most parts one A2A message may hold. */
export const A2A_PARTS_MAX = 32;

/** Options of {@link createA2AServer}. */
export interface A2AServerOptions {
  /** The team, opened in this process with {@link A2A_CLIENT_AGENT} registered. */
  team: TeamService;
  /** The team's agents: the Agent Card's skills are the lead's and the types it can spawn. */
  agents: AgentRegistry;
  /** Where the A2A tasks live (see `openJsonlA2ATaskStore`, `openPostgresA2ATaskStore`). */
  store: A2ATaskStore;
  /**
   * The team's log: on start, a client message accepted just before a crash is looked up in it, so
   * it is sent to the lead once. Without it, such a message is sent again.
   */
  log?: Pick<TeamLog, 'read'> | undefined;
  /** The external member A2A clients write as (default `a2a`). */
  member?: string | undefined;
  /** The card's name (default: the team id). */
  name?: string | undefined;
  /** The card's description (default: the lead type's description). */
  description?: string | undefined;
}

/** A team served over A2A; see {@link createA2AServer}. */
export interface A2AServer {
  /** The SDK's request handler, backed by the team and the task store. */
  readonly handler: A2ARequestHandler;
  /** The Agent Card for an edge at `origin` (e.g. `http://127.0.0.1:4000`). */
  card(origin: string): AgentCard;
  /** Answers a JSON-RPC request (A2A 1.0, or 0.3 without an `A2A-Version` header or with 0.3). */
  fetch(request: Request): Promise<Response>;
  /** Answers a request for the Agent Card. */
  fetchCard(request: Request): Response;
  /** Spawns the A2A member when missing, sends what a crash left unsent, and watches its mail. */
  start(): Promise<void>;
  /** Stops watching mail and ends open streams. The team and the store are left to their owner. */
  close(): void;
}

const FINAL: ReadonlySet<A2ATaskState> = new Set(['completed', 'failed', 'canceled']);
const STATE: Record<A2ATaskState, TaskState> = {
  submitted: TaskState.TASK_STATE_SUBMITTED,
  working: TaskState.TASK_STATE_WORKING,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
};

const textPart = (text: string): Part => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});

function toMessage(task: StoredA2ATask, entry: StoredA2ATask['history'][number]): Message {
  return {
    messageId: entry.messageId,
    contextId: task.contextId,
    taskId: task.id,
    role: entry.role === 'user' ? Role.ROLE_USER : Role.ROLE_AGENT,
    parts: [textPart(entry.text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function toArtifact(artifact: StoredA2ATask['artifacts'][number]): Artifact {
  return {
    artifactId: artifact.artifactId,
    name: artifact.name,
    description: '',
    parts: [textPart(artifact.text)],
    metadata: undefined,
    extensions: [],
  };
}

function statusOf(task: StoredA2ATask) {
  const last = task.history.at(-1);
  return {
    state: STATE[task.state],
    message:
      task.statusText !== undefined && last !== undefined && last.role === 'agent'
        ? toMessage(task, last)
        : undefined,
    timestamp: task.updatedAt,
  };
}

/** The SDK's view of a stored task. */
export function toSdkTask(task: StoredA2ATask, historyLength?: number): Task {
  const history = task.history.map((entry) => toMessage(task, entry));
  return {
    id: task.id,
    contextId: task.contextId,
    status: statusOf(task),
    artifacts: task.artifacts.map(toArtifact),
    history:
      historyLength === undefined ? history : history.slice(-historyLength || history.length),
    metadata: undefined,
  };
}

/** A deterministic id from parts (hex of sha-256): the same client message, the same task. */
function derivedId(prefix: string, ...parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(`${part.length}:${part}`);
  return `${prefix}-${hash.digest('hex').slice(0, 32)}`;
}

/** The client message's text, checked against A2A's caps and the team's message size. */
function messageText(message: Message | undefined, maxBytes: number): string {
  if (message === undefined) throw new RequestMalformedError('params.message is required');
  if (message.messageId === '' || message.messageId.length > A2A_ID_MAX) {
    throw new RequestMalformedError(`message.messageId must be 1 to ${A2A_ID_MAX} characters`);
  }
  if (message.contextId.length > A2A_ID_MAX || message.taskId.length > A2A_ID_MAX) {
    throw new RequestMalformedError(`ids are at most ${A2A_ID_MAX} characters`);
  }
  if (message.parts.length === 0 || message.parts.length > A2A_PARTS_MAX) {
    throw new RequestMalformedError(`a message holds 1 to ${A2A_PARTS_MAX} parts`);
  }
  const texts: string[] = [];
  for (const part of message.parts) {
    const content = part.content;
    if (content?.$case === 'text') texts.push(content.value);
    else if (content?.$case === 'data') texts.push(JSON.stringify(content.value) ?? '');
    else
      throw new RequestMalformedError('only text and data parts are taken (MESSAGE_UNSUPPORTED)');
  }
  const text = texts.join('\n\n');
  if (text.trim() === '') throw new RequestMalformedError('the message has no text');
  if (Buffer.byteLength(text) > maxBytes) {
    throw new RequestMalformedError(
      `MESSAGE_TOO_LARGE: the message text is over the team's ${maxBytes} bytes`,
    );
  }
  return text;
}

const SUMMARY_PREFIX = 'a2a:';

/**
 * The team as an A2A agent. A client message becomes durable mail to the lead from the external
 * member `a2a` (see {@link A2A_CLIENT_AGENT}), and opens an A2A task (`working`). The lead's mail
 * to that member while the task is open decides it: summary `input-required` asks the client back
 * (`input-required`; the client's next message on the task goes to the lead), `working` is a
 * status update, anything else completes the task with the mail as the `answer` artifact. A send
 * that fails fails the task; `tasks/cancel` cancels it and interrupts the lead.
 *
 * Tasks are kept in `options.store` before the client is answered. A client message whose
 * `messageId` was taken before answers the same task, without new mail; the lead's mail is
 * acknowledged only once the task it changed is stored, so it is applied once across restarts.
 */
export function createA2AServer(options: A2AServerOptions): A2AServer {
  const { team, store } = options;
  const memberName = options.member ?? 'a2a';
  const tasks = new Map<string, StoredA2ATask>();
  const byMessage = new Map<string, string>();
  const listeners = new Map<string, Set<() => void>>();
  let unwatch: (() => void) | undefined;
  let closed = false;
  const closers = new Set<() => void>();
  let loaded: Promise<void> | undefined;

  const load = () => {
    loaded ??= store.loadAll().then((all) => {
      for (const task of all) remember(task);
    });
    return loaded;
  };
  const remember = (task: StoredA2ATask) => {
    tasks.set(task.id, task);
    for (const id of task.messageIds) byMessage.set(id, task.id);
  };
  const save = async (task: StoredA2ATask) => {
    const next = { ...task, updatedAt: new Date().toISOString() };
    await store.put(next);
    remember(next);
    if (FINAL.has(next.state)) progress.delete(next.id);
    for (const listener of listeners.get(next.id) ?? []) listener();
    return next;
  };
  const listenersOf = (id: string) => {
    const known = listeners.get(id);
    if (known !== undefined) return known;
    const set = new Set<() => void>();
    listeners.set(id, set);
    return set;
  };
  const leadName = () => {
    const lead = team.listMembers(team.lead).find((m) => m.isLead);
    if (lead === undefined) throw new TeamError('UNKNOWN_MEMBER', 'the team has no lead');
    return lead.name;
  };
  const member = () => team.externalMember(memberName);

  /**
   * One at a time: sending a client message (the mail, then the task noting it) and applying the
   * lead's mail. The lead may answer before the task notes its mail; its answer waits until then.
   */
  let lock: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = lock.then(fn);
    lock = run.catch(() => undefined);
    return run;
  };

  /** Sends the task's pending client message to the lead, once. */
  const sendPending = (task: StoredA2ATask) => exclusive(() => sendPendingNow(task));
  const sendPendingNow = async (task: StoredA2ATask): Promise<StoredA2ATask> => {
    const pending = task.pending;
    if (pending === undefined) return task;
    try {
      const sent = await team.sendMessage(member(), {
        to: leadName(),
        text: `[A2A task ${task.id}] ${pending.text}`,
        summary: `${SUMMARY_PREFIX}${task.id}:${pending.messageId}`.slice(0, 200),
      });
      return await save({
        ...task,
        state: 'working',
        statusText: undefined,
        pending: undefined,
        teamMail: [...task.teamMail, sent.messageId],
      });
    } catch (error) {
      const code = TeamError.isInstance(error) ? error.code : 'INTERNAL';
      return await save({
        ...task,
        state: 'failed',
        statusText: `the team did not take the message (${code})`,
        pending: undefined,
        history: [
          ...task.history,
          {
            role: 'agent',
            messageId: derivedId('fail', task.id, pending.messageId),
            text: `the team did not take the message (${code})`,
          },
        ],
      });
    }
  };

  /** What the team did lately, per open task: transient status updates, never stored. */
  const progress = new Map<string, { count: number; text: string }>();
  const watchProgress = async (signal: AbortSignal) => {
    while (!signal.aborted) {
      let records: Awaited<ReturnType<TeamService['waitForChange']>>['records'];
      try {
        ({ records } = await team.waitForChange(member(), { timeoutMs: 60_000, signal }));
      } catch {
        return; // closing, or the member retired
      }
      const working = [...tasks.values()].filter((t) => t.state === 'working');
      if (working.length === 0) continue;
      const names = new Map(team.listMembers(team.lead).map((m) => [m.id, m.name]));
      const lines = records
        .map((r) => describeTeamChange(r, names))
        .filter((l): l is string => l !== undefined);
      if (lines.length === 0) continue;
      for (const task of working) {
        const last = progress.get(task.id);
        progress.set(task.id, { count: (last?.count ?? 0) + 1, text: lines.join('\n') });
        for (const listener of listeners.get(task.id) ?? []) listener();
      }
    }
  };
  const progressAbort = new AbortController();

  /** Accepts in flight, by client messageId: a concurrent retry waits for the first. */
  const accepting = new Map<string, Promise<StoredA2ATask>>();
  const accept = async (message: Message | undefined): Promise<StoredA2ATask> => {
    await load();
    const text = messageText(message, team.limits.maxMessageBytes);
    const msg = message as Message;
    const known = byMessage.get(msg.messageId);
    if (known !== undefined) return tasks.get(known) as StoredA2ATask;
    const running = accepting.get(msg.messageId);
    if (running !== undefined) return running;
    const accepted = acceptNew(msg, text).finally(() => accepting.delete(msg.messageId));
    accepting.set(msg.messageId, accepted);
    return accepted;
  };
  const acceptNew = (msg: Message, text: string): Promise<StoredA2ATask> =>
    exclusive(() => acceptNow(msg, text));
  const acceptNow = async (msg: Message, text: string): Promise<StoredA2ATask> => {
    let task: StoredA2ATask;
    if (msg.taskId !== '') {
      const open = tasks.get(msg.taskId);
      if (open === undefined) throw new TaskNotFoundError(`no task ${msg.taskId}`);
      if (FINAL.has(open.state)) {
        throw new RequestMalformedError(`task ${open.id} is ${open.state}: start a new task`);
      }
      task = {
        ...open,
        messageIds: [...open.messageIds, msg.messageId],
        history: [...open.history, { role: 'user', messageId: msg.messageId, text }],
        pending: { messageId: msg.messageId, text },
      };
    } else {
      const id = derivedId('task', memberName, msg.messageId);
      task = {
        v: 1,
        id,
        contextId: msg.contextId === '' ? derivedId('ctx', id) : msg.contextId,
        state: 'submitted',
        history: [{ role: 'user', messageId: msg.messageId, text }],
        artifacts: [],
        messageIds: [msg.messageId],
        pending: { messageId: msg.messageId, text },
        teamMail: [],
        appliedMail: [],
        updatedAt: '',
      };
    }
    return sendPendingNow(await save(task));
  };

  /** Waits until `task` is no longer `submitted`/`working`, or `signal` ends the wait. */
  const settled = (id: string, signal?: AbortSignal) =>
    new Promise<StoredA2ATask>((resolve) => {
      const check = () => {
        const now = tasks.get(id) as StoredA2ATask;
        if (FINAL.has(now.state) || now.state === 'input-required' || closed || signal?.aborted) {
          listeners.get(id)?.delete(check);
          closers.delete(check);
          signal?.removeEventListener('abort', check);
          resolve(now);
        }
      };
      listenersOf(id).add(check);
      closers.add(check);
      signal?.addEventListener('abort', check);
      check();
    });

  async function* follow(id: string, signal?: AbortSignal): AsyncGenerator<StreamResponse> {
    let wake: (() => void) | undefined;
    let changed = true;
    const listener = () => {
      changed = true;
      wake?.();
    };
    const set = listenersOf(id);
    set.add(listener);
    closers.add(listener);
    signal?.addEventListener('abort', listener);
    try {
      let first = true;
      let artifacts = 0;
      let seen = 0;
      let updated = '';
      while (!closed && !signal?.aborted) {
        if (!changed) await new Promise<void>((resolve) => (wake = resolve));
        changed = false;
        const task = tasks.get(id) as StoredA2ATask;
        const news = progress.get(id);
        if (first) {
          first = false;
          artifacts = task.artifacts.length;
          updated = task.updatedAt;
          // what the team did before the stream began comes right after the task
          if (news !== undefined) changed = true;
          yield { payload: { $case: 'task', value: toSdkTask(task) } };
        } else if (task.updatedAt === updated && news !== undefined && news.count > seen) {
          // the team moved, the task did not: a working status with what the team did
          seen = news.count;
          const entry = {
            role: 'agent' as const,
            messageId: derivedId('progress', id, String(news.count)),
            text: news.text,
          };
          yield {
            payload: {
              $case: 'statusUpdate',
              value: {
                taskId: task.id,
                contextId: task.contextId,
                status: {
                  state: TaskState.TASK_STATE_WORKING,
                  message: toMessage(task, entry),
                  timestamp: new Date().toISOString(),
                },
                metadata: undefined,
              },
            },
          };
          continue;
        } else {
          updated = task.updatedAt;
          for (const artifact of task.artifacts.slice(artifacts)) {
            yield {
              payload: {
                $case: 'artifactUpdate',
                value: {
                  taskId: task.id,
                  contextId: task.contextId,
                  artifact: toArtifact(artifact),
                  append: false,
                  lastChunk: true,
                  metadata: undefined,
                },
              },
            };
          }
          artifacts = task.artifacts.length;
          yield {
            payload: {
              $case: 'statusUpdate',
              value: {
                taskId: task.id,
                contextId: task.contextId,
                status: statusOf(task),
                metadata: undefined,
              },
            },
          };
        }
        if (FINAL.has(task.state) || task.state === 'input-required') return;
      }
    } finally {
      set.delete(listener);
      closers.delete(listener);
      signal?.removeEventListener('abort', listener);
    }
  }

  const found = async (id: string) => {
    await load();
    const task = tasks.get(id);
    if (task === undefined) throw new TaskNotFoundError(`no task ${id}`);
    return task;
  };

  /** The open task a message of the lead answers: the one it names, else the latest open one. */
  const openTaskFor = (mail: InboxMessage): StoredA2ATask | undefined => {
    const open = [...tasks.values()].filter(
      (t) => (t.state === 'working' || t.state === 'input-required') && t.pending === undefined,
    );
    if (open.some((t) => t.appliedMail.includes(mail.id))) return undefined;
    return (
      open.find((t) => mail.text.includes(t.id)) ??
      open.sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : -1))[0]
    );
  };

  const apply = async (mail: InboxMessage, lead: string) => {
    if (mail.kind !== 'message' || mail.from !== lead) return;
    const task = openTaskFor(mail);
    if (task === undefined) return;
    const kind = mail.summary?.trim().toLowerCase();
    const state: A2ATaskState =
      kind === 'input-required' ? 'input-required' : kind === 'working' ? 'working' : 'completed';
    const entry = { role: 'agent' as const, messageId: mail.id, text: mail.text };
    await save({
      ...task,
      state,
      statusText: mail.text,
      history: [...task.history, entry],
      artifacts:
        state === 'completed'
          ? [...task.artifacts, { artifactId: mail.id, name: 'answer', text: mail.text }]
          : task.artifacts,
      appliedMail: [...task.appliedMail, mail.id],
    });
  };

  let draining = false;
  let again = false;
  const kinds = ['message', 'idle_notification', 'task_assignment'] as const;
  const drain = async () => {
    again = true;
    if (draining) return;
    draining = true;
    try {
      while (again && !closed) {
        again = false;
        const ref = member();
        const lead = leadName();
        let page = await team.readInbox(ref, { kinds });
        while (page.cursor !== undefined && !closed) {
          const { messages } = page;
          await exclusive(async () => {
            for (const mail of messages) await apply(mail, lead);
          });
          page = await team.readInbox(ref, { after: page.cursor, kinds });
        }
      }
    } catch {
      // the team is closing, or the member retired: the mail stays for the next start
    } finally {
      draining = false;
    }
  };

  const recover = async () => {
    const unsent = [...tasks.values()].filter((t) => t.pending !== undefined);
    if (unsent.length === 0) return;
    const wanted = new Map(
      unsent.map((t) => [`${SUMMARY_PREFIX}${t.id}:${t.pending?.messageId}`.slice(0, 200), t]),
    );
    const memberId = member().memberId;
    if (options.log !== undefined) {
      for await (const record of options.log.read()) {
        if (record.type !== 'message.queued' || record.message.senderId !== memberId) continue;
        const task = wanted.get(record.message.summary ?? '');
        if (task === undefined) continue;
        wanted.delete(record.message.summary ?? '');
        await save({
          ...task,
          state: 'working',
          pending: undefined,
          teamMail: [...task.teamMail, record.message.id],
        });
      }
    }
    for (const task of wanted.values()) await sendPending(task);
  };

  const handler: A2ARequestHandler = {
    async getAgentCard() {
      return card('http://127.0.0.1');
    },
    async getAuthenticatedExtendedAgentCard() {
      throw new UnsupportedOperationError('no extended card');
    },
    async sendMessage(params, context) {
      const task = await accept(params.message);
      if (params.configuration?.returnImmediately === true) return toSdkTask(task);
      const signal = (context as { signal?: AbortSignal } | undefined)?.signal;
      return toSdkTask(await settled(task.id, signal), params.configuration?.historyLength);
    },
    async *sendMessageStream(params) {
      const task = await accept(params.message);
      yield* follow(task.id);
    },
    async getTask(params) {
      return toSdkTask(await found(params.id), params.historyLength);
    },
    async cancelTask(params) {
      await found(params.id);
      const canceled = await exclusive(async () => {
        const task = tasks.get(params.id) as StoredA2ATask;
        if (FINAL.has(task.state)) {
          throw new TaskNotCancelableError(`task ${task.id} is ${task.state}`);
        }
        return save({ ...task, state: 'canceled', pending: undefined });
      });
      const lead = leadName();
      // the work this task started is the lead's turn on its mail
      await team.interrupt(team.lead, { target: lead }).catch(() => undefined);
      return toSdkTask(canceled);
    },
    async *resubscribe(params) {
      await found(params.id);
      yield* follow(params.id);
    },
    async listTasks(params) {
      await load();
      const all = [...tasks.values()].filter(
        (t) => params.contextId === '' || t.contextId === params.contextId,
      );
      const pageSize = Math.min(Math.max(params.pageSize ?? 50, 1), 100);
      return {
        tasks: all.slice(0, pageSize).map((t) => toSdkTask(t, params.historyLength)),
        nextPageToken: '',
        pageSize,
        totalSize: all.length,
      };
    },
    async createTaskPushNotificationConfig() {
      throw new UnsupportedOperationError('push notifications are not supported');
    },
    async getTaskPushNotificationConfig() {
      throw new UnsupportedOperationError('push notifications are not supported');
    },
    async listTaskPushNotificationConfigs() {
      throw new UnsupportedOperationError('push notifications are not supported');
    },
    async deleteTaskPushNotificationConfig() {
      throw new UnsupportedOperationError('push notifications are not supported');
    },
  };

  function card(origin: string): AgentCard {
    const leadType = team.listMembers(team.lead).find((m) => m.isLead)?.agentType ?? 'lead';
    const skills: AgentSkill[] = [];
    for (const type of options.agents.types()) {
      const definition = options.agents.get(type);
      if (options.agents.isExternal(type)) continue;
      skills.push({
        id: type,
        name: type,
        description:
          (definition as { description?: string }).description ??
          (type === leadType ? 'The team lead: takes the request and runs the team.' : `A ${type}`),
        tags: [type === leadType ? 'lead' : 'teammate'],
        examples: [],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
        securityRequirements: [],
      });
    }
    const url = `${origin}${A2A_PATH}`;
    const lead = options.agents.get(leadType) as { description?: string };
    return {
      name: options.name ?? team.teamId,
      description: options.description ?? lead.description ?? `the teamwire team ${team.teamId}`,
      supportedInterfaces: duplicateInterfacesForLegacy(
        [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
        ['JSONRPC'],
      ),
      provider: undefined,
      version: '1.0.0',
      capabilities: { streaming: true, pushNotifications: false, extensions: [] },
      securitySchemes: {
        bearer: {
          scheme: {
            $case: 'httpAuthSecurityScheme',
            value: {
              description: "the team edge's token (x-teamwire-token or Authorization: Bearer)",
              scheme: 'bearer',
              bearerFormat: '',
            },
          },
        },
      },
      securityRequirements: [{ schemes: { bearer: { list: [] } } }],
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills,
      signatures: [],
    };
  }

  const v1 = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);

  return {
    handler,
    card,
    fetchCard(request) {
      const origin = new URL(request.url).origin;
      return new Response(JSON.stringify(AgentCard.toJSON(card(origin))), {
        headers: { 'content-type': 'application/json', 'cache-control': 'no-cache' },
      });
    },
    async fetch(request) {
      if (request.method !== 'POST') {
        return rpcError(null, -32600, 'A2A JSON-RPC takes POST', 405);
      }
      let body: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(await request.text());
        if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
          return rpcError(null, -32600, 'a JSON-RPC request is an object');
        }
        body = parsed as Record<string, unknown>;
      } catch {
        return rpcError(null, -32700, 'the body is not JSON');
      }
      const version = request.headers.get('a2a-version') ?? '0.3';
      const useLegacy = version === '0.3';
      const headers: Record<string, string> = {};
      request.headers.forEach((value, key) => {
        headers[key] = value;
      });
      const context = defaultServerCallContextBuilder({
        extensions: undefined,
        user: new UnauthenticatedUser(),
        headers,
        requestedVersion: useLegacy ? '0.3' : version,
      });
      Object.assign(context, { signal: request.signal });
      const result = await (useLegacy ? legacy : v1).handle(body, context);
      if (typeof (result as AsyncGenerator)[Symbol.asyncIterator] !== 'function') {
        return json(result);
      }
      const stream = result as AsyncGenerator<unknown>;
      const encoder = new TextEncoder();
      return new Response(
        new ReadableStream<Uint8Array>({
          async pull(controller) {
            try {
              const next = await stream.next();
              if (next.done) controller.close();
              else controller.enqueue(encoder.encode(`data: ${JSON.stringify(next.value)}\n\n`));
            } catch (error) {
              const mapped = useLegacy
                ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error)
                : JsonRpcTransportHandler.mapToJSONRPCError(error);
              const event = { jsonrpc: '2.0', id: body.id ?? null, error: mapped };
              controller.enqueue(
                encoder.encode(`event: error\ndata: ${JSON.stringify(event)}\n\n`),
              );
              controller.close();
            }
          },
          async cancel() {
            await stream.return(undefined);
          },
        }),
        {
          headers: {
            'content-type': 'text/event-stream',
            'cache-control': 'no-cache',
            connection: 'keep-alive',
          },
        },
      );
    },
    async start() {
      await load();
      if (!team.listMembers(team.lead).some((m) => m.name === memberName)) {
        await team.spawnTeammate(team.lead, {
          name: memberName,
          description: A2A_CLIENT_AGENT.description ?? 'A2A clients',
          prompt: 'You are the A2A clients of this team.',
          agentType: A2A_CLIENT_AGENT.type,
        });
        // the spawn prompt is no answer to any task
        const ref = member();
        let page = await team.readInbox(ref, { kinds });
        while (page.cursor !== undefined) {
          page = await team.readInbox(ref, { after: page.cursor, kinds });
        }
      }
      await recover();
      unwatch = team.watchInbox(member(), () => void drain());
      void watchProgress(progressAbort.signal);
      await drain();
    },
    close() {
      closed = true;
      unwatch?.();
      progressAbort.abort();
      for (const close of [...closers]) close();
    },
  };
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

function rpcError(id: unknown, code: number, message: string, status = 200): Response {
  return json({ jsonrpc: '2.0', id, error: { code, message } }, status);
}
