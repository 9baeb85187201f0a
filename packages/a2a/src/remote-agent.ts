import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { type AgentCard, Role, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';

/** Test support: an A2A agent on the SDK's own server (express), counting what it receives. */
export interface RemoteAgent {
  cardUrl: string;
  port: number;
  /** Messages received, by messageId. */
  received: Map<string, number>;
  /** The texts received, in order. */
  texts: string[];
  /** Requests refused for a wrong or missing token. */
  refused: number;
  /** Holds the next answers until `release` is called. */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

export async function startRemoteAgent(
  options: { port?: number; token?: string; streaming?: boolean } = {},
): Promise<RemoteAgent> {
  const received = new Map<string, number>();
  const texts: string[] = [];
  let held: Promise<void> | undefined;
  let release = () => {};
  let refused = 0;
  const port = options.port ?? (await freePort());
  const card = (): AgentCard => ({
    name: 'echo',
    description: 'Echoes; asks back when asked a QUESTION.',
    supportedInterfaces: [
      {
        url: `http://127.0.0.1:${port}/a2a`,
        protocolBinding: 'JSONRPC',
        tenant: '',
        protocolVersion: '1.0',
      },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: {
      streaming: options.streaming ?? true,
      pushNotifications: false,
      extensions: [],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  });
  const executor: AgentExecutor = {
    async execute(context, bus) {
      const message = context.userMessage;
      received.set(message.messageId, (received.get(message.messageId) ?? 0) + 1);
      const text = message.parts
        .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
        .join('');
      texts.push(text);
      const base = { id: context.taskId, contextId: context.contextId };
      if (context.task === undefined) {
        bus.publish(
          AgentEvent.task({
            ...base,
            status: {
              state: TaskState.TASK_STATE_WORKING,
              message: undefined,
              timestamp: undefined,
            },
            artifacts: [],
            history: [message],
            metadata: undefined,
          }),
        );
      }
      if (held !== undefined) await held;
      const asks = text.includes('QUESTION') && context.task === undefined;
      const reply = {
        messageId: `reply-${message.messageId}`,
        contextId: context.contextId,
        taskId: context.taskId,
        role: Role.ROLE_AGENT,
        parts: [
          {
            content: {
              $case: 'text' as const,
              value: asks ? 'Which one?' : `echo: ${text.slice(-60)}`,
            },
            metadata: undefined,
            filename: '',
            mediaType: 'text/plain',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      };
      bus.publish(
        AgentEvent.statusUpdate({
          taskId: context.taskId,
          contextId: context.contextId,
          status: {
            state: asks ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_COMPLETED,
            message: reply,
            timestamp: new Date().toISOString(),
          },
          metadata: undefined,
        }),
      );
      bus.finished();
    },
    async cancelTask() {},
  };
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  const app = express();
  app.use((req, res, next) => {
    if (options.token !== undefined && req.headers.authorization !== `Bearer ${options.token}`) {
      refused++;
      res.status(401).json({ error: 'unauthorized' });
      return;
    }
    next();
  });
  app.use(
    '/.well-known/agent-card.json',
    agentCardHandler({ agentCardProvider: async () => card() }),
  );
  app.use(
    '/a2a',
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
  );
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  return {
    cardUrl: `http://127.0.0.1:${port}/.well-known/agent-card.json`,
    port,
    received,
    texts,
    get refused() {
      return refused;
    },
    hold() {
      held = new Promise((resolve) => {
        release = () => {
          held = undefined;
          resolve();
        };
      });
    },
    release: () => release(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port free now (the agent restarts on the same one). */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
