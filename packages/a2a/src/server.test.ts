import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import { A2A_TASKS_FILE } from './task-store.js';
import {
  type A2ATestTeam,
  EDGE_TOKEN,
  mailFromA2A,
  openA2ATestTeam,
  tempDir,
} from './test-team.js';

// biome-ignore lint/suspicious/noExplicitAny: JSON read from the wire in assertions
type Json = any;
const body = async (response: Response): Promise<Json> => response.json();

const authed: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${EDGE_TOKEN}`);
  return fetch(input, { ...init, headers });
};

async function sdkClient(origin: string) {
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
  });
  return factory.createFromUrl(origin);
}

function userMessage(messageId: string, text: string, more: Partial<Message> = {}): Message {
  return {
    messageId,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...more,
  };
}

const send = (message: Message, returnImmediately = false) => ({
  tenant: '',
  message,
  configuration: {
    acceptedOutputModes: [],
    taskPushNotificationConfig: undefined,
    returnImmediately,
  },
  metadata: undefined,
});

const asTask = (result: unknown): Task => {
  const task = result as Task;
  expect(typeof task.id).toBe('string');
  return task;
};
const textOf = (task: Task) =>
  task.artifacts.flatMap((a) =>
    a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')),
  );

let open: A2ATestTeam | undefined;
let removeDir: (() => Promise<void>) | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
  await removeDir?.();
  removeDir = undefined;
});

async function start(options: Parameters<typeof openA2ATestTeam>[1] = {}) {
  const { dir, remove } = await tempDir();
  removeDir = remove;
  open = await openA2ATestTeam(dir, options);
  return open;
}

describe('a team as an A2A server', () => {
  it('serves its Agent Card without a token, and JSON-RPC only with the edge token', async () => {
    const t = await start();
    const response = await fetch(t.cardUrl);
    expect(response.status).toBe(200);
    const card = await body(response);
    expect(card.name).toBe('a2a-team');
    expect(card.capabilities.streaming).toBe(true);
    expect(card.skills.map((s: { id: string }) => s.id)).toEqual(['lead']);
    expect(card.skills[0].description).toBe('Plans the work and answers for the team.');
    expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe('bearer');
    expect(
      card.supportedInterfaces.map((i: { protocolVersion: string }) => i.protocolVersion),
    ).toEqual(expect.arrayContaining(['1.0', '0.3']));
    const refused = await fetch(`${t.edge.origin}/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }),
    });
    expect(refused.status).toBe(401);
    expect((await body(refused)).error.data.code).toBe('UNAUTHORIZED');
  });

  it('message/send becomes one mail to the lead and completes with its answer; a retry gets the same task', async () => {
    const t = await start();
    const client = await sdkClient(t.edge.origin);
    const first = asTask(await client.sendMessage(send(userMessage('m-1', 'paint the fence'))));
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(first).join('')).toContain('done: paint the fence');
    const again = asTask(await client.sendMessage(send(userMessage('m-1', 'paint the fence'))));
    expect(again.id).toBe(first.id);
    expect(await mailFromA2A(t.log, t.team)).toHaveLength(1);
    const got = await client.getTask({ tenant: '', id: first.id });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.history.map((m) => m.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);
  });

  it('concurrent sends of one messageId make one task and one mail', async () => {
    const t = await start();
    const client = await sdkClient(t.edge.origin);
    const tasks = await Promise.all(
      [1, 2, 3].map(() => client.sendMessage(send(userMessage('same-1', 'once'), true))),
    );
    expect(new Set(tasks.map((r) => asTask(r).id)).size).toBe(1);
    expect(await mailFromA2A(t.log, t.team)).toHaveLength(1);
  });

  it('message/stream follows the task to completed, with the answer as an artifact', async () => {
    const t = await start();
    const client = await sdkClient(t.edge.origin);
    const kinds: string[] = [];
    let last: TaskState | undefined;
    for await (const event of client.sendMessageStream(send(userMessage('s-1', 'sweep')))) {
      const payload = event.payload;
      if (payload === undefined) continue;
      kinds.push(payload.$case);
      if (payload.$case === 'statusUpdate') last = payload.value.status?.state;
      if (payload.$case === 'artifactUpdate') {
        expect(payload.value.artifact?.name).toBe('answer');
      }
    }
    expect(kinds[0]).toBe('task');
    expect(kinds).toContain('artifactUpdate');
    expect(last).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('message/stream reports what the team does while the task is working', async () => {
    const t = await start();
    const client = await sdkClient(t.edge.origin);
    const statuses: { state: TaskState | undefined; text: string }[] = [];
    for await (const event of client.sendMessageStream(send(userMessage('w-1', 'BOARD first')))) {
      if (event.payload?.$case !== 'statusUpdate') continue;
      const status = event.payload.value.status;
      const text = (status?.message?.parts ?? [])
        .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
        .join('');
      statuses.push({ state: status?.state, text });
    }
    const created = statuses.findIndex(
      (s) => s.state === TaskState.TASK_STATE_WORKING && s.text.includes('task-1 pending'),
    );
    expect(created).toBeGreaterThanOrEqual(0);
    expect(statuses.at(-1)?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(statuses.at(-1)?.text).toContain('done with the board');
  });

  it('a question of the lead is input-required; the answer on the same task goes back to the lead', async () => {
    const t = await start();
    const client = await sdkClient(t.edge.origin);
    const asked = asTask(await client.sendMessage(send(userMessage('q-1', 'ASK me'))));
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const answered = asTask(
      await client.sendMessage(
        send(userMessage('q-2', 'blue', { taskId: asked.id, contextId: asked.contextId })),
      ),
    );
    expect(answered.id).toBe(asked.id);
    expect(answered.contextId).toBe(asked.contextId);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(answered).join('')).toContain('done: blue');
    expect(await mailFromA2A(t.log, t.team)).toHaveLength(2);
  });

  it('tasks/cancel cancels an open task and interrupts the lead', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const t = await start({
      hold: () => {
        started();
        return new Promise(() => {}); // held until interrupted
      },
    });
    const client = await sdkClient(t.edge.origin);
    const task = asTask(await client.sendMessage(send(userMessage('c-1', 'HOLD on'), true)));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    await running; // the lead's turn on the mail is running
    const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(
      client.cancelTask({ tenant: '', id: task.id, metadata: undefined }),
    ).rejects.toThrow(/cancel/i);
    // the interrupted turn ended: the team goes idle (a held turn never would)
    await t.team.idle();
  });

  it('refuses bad input with A2A JSON-RPC errors and stores nothing', async () => {
    const t = await start();
    const client = await sdkClient(t.edge.origin);
    await expect(client.getTask({ tenant: '', id: 'no-such-task' })).rejects.toThrow(
      /not found|no task/i,
    );
    const tooMany = userMessage('b-1', 'x');
    tooMany.parts = Array.from({ length: 33 }, () => tooMany.parts[0] as Message['parts'][number]);
    await expect(client.sendMessage(send(tooMany))).rejects.toThrow(/parts/);
    const tooLarge = userMessage('b-2', 'x'.repeat(t.team.limits.maxMessageBytes + 1));
    await expect(client.sendMessage(send(tooLarge))).rejects.toThrow(/MESSAGE_TOO_LARGE/);
    const raw = await fetch(`${t.edge.origin}/a2a`, {
      method: 'POST',
      headers: { authorization: `Bearer ${EDGE_TOKEN}`, 'content-type': 'application/json' },
      body: 'not json',
    });
    expect((await body(raw)).error.code).toBe(-32700);
    expect(await mailFromA2A(t.log, t.team)).toHaveLength(0);
    await expect(readFile(join(t.dir, 'team', A2A_TASKS_FILE), 'utf8')).resolves.toBe('');
  });

  it('speaks A2A 0.3 JSON-RPC (message/send, tasks/get) to a client without A2A-Version', async () => {
    const t = await start();
    const rpc = async (method: string, params: unknown) => {
      const response = await fetch(`${t.edge.origin}/a2a`, {
        method: 'POST',
        headers: { authorization: `Bearer ${EDGE_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
      });
      return body(response);
    };
    const sent = await rpc('message/send', {
      message: {
        kind: 'message',
        messageId: 'v03-1',
        role: 'user',
        parts: [{ kind: 'text', text: 'hello from 0.3' }],
      },
    });
    expect(sent.result.kind).toBe('task');
    expect(sent.result.status.state).toBe('completed');
    const got = await rpc('tasks/get', { id: sent.result.id });
    expect(got.result.artifacts[0].parts[0].text).toContain('done: hello from 0.3');
  });
});

describe('durable A2A tasks', () => {
  it('answers tasks/get after a restart, and a retried messageId gets the same task without new mail', async () => {
    const { dir, remove } = await tempDir();
    removeDir = remove;
    let t = await openA2ATestTeam(dir);
    let client = await sdkClient(t.edge.origin);
    const done = asTask(await client.sendMessage(send(userMessage('r-1', 'persist me'))));
    await t.close();
    t = await openA2ATestTeam(dir);
    open = t;
    client = await sdkClient(t.edge.origin);
    const got = await client.getTask({ tenant: '', id: done.id });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(got).join('')).toContain('done: persist me');
    const retried = asTask(await client.sendMessage(send(userMessage('r-1', 'persist me'))));
    expect(retried.id).toBe(done.id);
    expect(await mailFromA2A(t.log, t.team)).toHaveLength(1);
  });

  it('the lead answer that arrived while the server was down completes the task once after a restart', async () => {
    const { dir, remove } = await tempDir();
    removeDir = remove;
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let t = await openA2ATestTeam(dir, { hold: () => held });
    let client = await sdkClient(t.edge.origin);
    const task = asTask(
      await client.sendMessage(send(userMessage('k-1', 'HOLD then answer'), true)),
    );
    expect(task.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    // the A2A side goes down; the lead answers into the durable mailbox meanwhile
    t.server.close();
    release();
    await t.team.idle();
    await t.close();
    t = await openA2ATestTeam(dir);
    open = t;
    client = await sdkClient(t.edge.origin);
    const got = await client.getTask({ tenant: '', id: task.id });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.artifacts).toHaveLength(1);
    expect(textOf(got).join('')).toContain('done after hold');
    // closed and opened once more: the answer was acknowledged, never applied twice
    await t.close();
    t = await openA2ATestTeam(dir);
    open = t;
    const again = await (await sdkClient(t.edge.origin)).getTask({ tenant: '', id: task.id });
    expect(again.artifacts).toHaveLength(1);
    expect(await mailFromA2A(t.log, t.team)).toHaveLength(1);
  });

  it('a client message accepted but not mailed before a crash is mailed once on the next start', async () => {
    const { dir, remove } = await tempDir();
    removeDir = remove;
    let t = await openA2ATestTeam(dir);
    await t.close();
    // the store holds the accepted message, as a crash between the two writes leaves it
    const { openJsonlA2ATaskStore } = await import('./task-store.js');
    const store = await openJsonlA2ATaskStore(join(dir, 'team'));
    await store.put({
      v: 1,
      id: 'task-crashed',
      contextId: 'ctx-1',
      state: 'submitted',
      history: [{ role: 'user', messageId: 'x-1', text: 'left behind' }],
      artifacts: [],
      messageIds: ['x-1'],
      pending: { messageId: 'x-1', text: 'left behind' },
      teamMail: [],
      appliedMail: [],
      updatedAt: new Date().toISOString(),
    });
    await store.close();
    t = await openA2ATestTeam(dir);
    await t.team.idle();
    await t.close();
    t = await openA2ATestTeam(dir);
    open = t;
    const got = await (await sdkClient(t.edge.origin)).getTask({ tenant: '', id: 'task-crashed' });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(await mailFromA2A(t.log, t.team)).toHaveLength(1);
  });
});
