import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import {
  type AgentRef,
  type AgentTool,
  INBOX_PAGE_MAX,
  TeamError,
  type TeamService,
} from '@teamwire/core';
import { z } from 'zod';
import type { InboxCursorSeal } from './tokens.js';
import { externalMemberTools } from './tools.js';

/** The URI of a member's inbox resource; subscribe to it to hear of new mail. */
export const INBOX_URI = 'teamwire://inbox';

/** What {@link createMemberServer} serves. */
export interface MemberServerOptions {
  /** The team, opened in this process. */
  team: TeamService;
  /** The name of the external member this connection acts as (fixed for the connection). */
  member: string;
  /** The agent types the lead may spawn, offered to a client that is the lead. */
  agentTypes?: readonly string[] | undefined;
  /** The member's working directory as tools see it (default `process.cwd()`). */
  cwd?: string | undefined;
  /**
   * Seals the inbox cursors handed out, e.g. the `TokenIssuer` of the team (`createMcpRoutes` passes
   * its own): a cursor not sealed for this member then gets `INVALID_CURSOR`, whatever it names.
   * Without it the cursors are core's own, which core checks but does not authenticate.
   */
  cursors?: InboxCursorSeal | undefined;
  /** The server's name and version, as clients see them. */
  serverInfo?:
    | {
        /** The server's name (default `teamwire`). */
        name: string;
        /** Its version. */
        version: string;
      }
    | undefined;
}

/** One MCP server connection for one member; see {@link createMemberServer}. */
export interface MemberServer {
  /** The SDK server: connect it to a transport. */
  readonly server: Server;
  /** Ends the connection's inbox watch (the transport closes the connection itself). */
  close(): void;
}

/** What an MCP tool call answers for a thrown error: an MCP tool error carrying its code. */
export function toolError(error: unknown): CallToolResult {
  const failure = TeamError.isInstance(error)
    ? error
    : new TeamError('TOOL_FAILED', error instanceof Error ? error.message : String(error), {
        cause: error,
      });
  return {
    isError: true,
    content: [{ type: 'text', text: `${failure.code}: ${failure.message}` }],
    structuredContent: { error: { code: failure.code, message: failure.message } },
  };
}

function toolResult(value: unknown): CallToolResult {
  const structured =
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : { result: value };
  return {
    content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }],
    structuredContent: structured,
  };
}

function instructions(name: string, isLead: boolean): string {
  return [
    `You are ${name}, ${isLead ? 'the lead' : 'a member'} of a teamwire team of agents.`,
    'Your mail waits in your inbox: call read_inbox, handle the messages, then acknowledge them (pass the cursor as `after` to your next read_inbox, or call ack_inbox). Unacknowledged mail comes again; acknowledged mail never does.',
    'Use the task tools to claim work (task_update with action claim), report with send_message, and wait_for_change instead of polling.',
    'A shutdown_request in your inbox asks you to stop: acknowledging it ends your membership.',
  ].join('\n');
}

/**
 * A low-level MCP server for one connection of one external member. Its tools are core's own (see
 * {@link externalMemberTools}), listed with the JSON Schema of their zod input schema; a call is
 * validated with that schema (`INVALID_ARGUMENT` otherwise), then runs with the member's credential
 * as the host's `TeamService` resolves it on every call, so a member that retired or moved to
 * another process is refused (`NOT_A_MEMBER`, `NOT_PLACED_HERE`). Every failure comes back as an
 * MCP tool error whose text starts with the `TeamError` code and whose structured content is
 * `{error: {code, message}}`. The inbox is also a resource, `teamwire://inbox`: a client that
 * subscribes to it gets `notifications/resources/updated` whenever mail for the member is durable.
 */
export function createMemberServer(options: MemberServerOptions): MemberServer {
  const { team, member } = options;
  const resolve = (): AgentRef => team.externalMember(member);
  const ref = resolve();
  const isLead = ref === team.lead;
  const tools = externalMemberTools({
    isLead,
    agentTypes: options.agentTypes,
    cursors: options.cursors,
  });
  const byName = new Map<string, AgentTool<unknown>>(tools.map((tool) => [tool.name, tool]));
  const listed = tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: z.toJSONSchema(tool.inputSchema, { io: 'input' }) as {
      type: 'object';
      [key: string]: unknown;
    },
  }));
  const cwd = options.cwd ?? process.cwd();
  const server = new Server(options.serverInfo ?? { name: 'teamwire', version: '0.0.0' }, {
    capabilities: { tools: {}, resources: { subscribe: true } },
    instructions: instructions(member, isLead),
  });

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    try {
      const tool = byName.get(request.params.name);
      if (tool === undefined) {
        throw new TeamError(
          'UNKNOWN_TOOL',
          `no tool named ${JSON.stringify(request.params.name)}`,
          {
            details: { tool: request.params.name },
          },
        );
      }
      const parsed = tool.inputSchema.safeParse(request.params.arguments ?? {});
      if (!parsed.success) {
        throw new TeamError(
          'INVALID_ARGUMENT',
          `invalid input for ${tool.name}: ${z.prettifyError(parsed.error)}`,
          { cause: parsed.error },
        );
      }
      const agent = resolve();
      const result = await tool.execute(parsed.data, {
        agent,
        team: team.forMember(agent),
        cwd,
        signal: extra.signal,
      });
      return toolResult(result);
    } catch (error) {
      return toolError(error);
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: [
      {
        uri: INBOX_URI,
        name: 'inbox',
        description: `The pending team mail of ${member} (read_inbox reads and acknowledges it).`,
        mimeType: 'application/json',
      },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    requireInbox(request.params.uri);
    // a read without `after` acknowledges nothing: the resource is a view
    const page = await team.readInbox(resolve(), { limit: INBOX_PAGE_MAX });
    const view = {
      pending: page.messages.length + page.remaining,
      messages: page.messages.map((m) => ({ id: m.id, from: m.from, kind: m.kind, text: m.text })),
    };
    return {
      contents: [{ uri: INBOX_URI, mimeType: 'application/json', text: JSON.stringify(view) }],
    };
  });

  let unwatch: (() => void) | undefined;
  let ringing = false;
  server.setRequestHandler(SubscribeRequestSchema, (request) => {
    requireInbox(request.params.uri);
    unwatch ??= team.watchInbox(resolve(), () => {
      // one notification per burst of mail
      if (ringing) return;
      ringing = true;
      queueMicrotask(() => {
        ringing = false;
        server.sendResourceUpdated({ uri: INBOX_URI }).catch(() => {
          // the client went away; its transport's close ends the watch
        });
      });
    });
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    requireInbox(request.params.uri);
    unwatch?.();
    unwatch = undefined;
    return {};
  });

  const close = () => {
    unwatch?.();
    unwatch = undefined;
  };
  server.onclose = close;
  return { server, close };
}

function requireInbox(uri: string): void {
  if (uri !== INBOX_URI) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `no resource ${JSON.stringify(uri)}: only ${INBOX_URI}`,
    );
  }
}
