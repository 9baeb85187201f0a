export type { McpClientConfig, McpClientTarget } from './client-config.js';
export { clientConfig } from './client-config.js';
export type { MemberServer, MemberServerOptions } from './member-server.js';
export { createMemberServer, INBOX_URI, toolError } from './member-server.js';
export type { McpRoutes, McpRoutesOptions } from './routes.js';
export { createMcpRoutes, mcpRefusal } from './routes.js';
export type { ServeStdioOptions, StdioServing } from './stdio.js';
export { serveStdio } from './stdio.js';
export type { InboxCursorSeal, TokenIssuer } from './tokens.js';
export { createTokenIssuer, generateSecret } from './tokens.js';
export {
  AckInboxToolInput,
  APPROVALS_LIST_MAX,
  type ApprovalListScope,
  type ApprovalListStatus,
  createApprovalTools,
  createInboxTools,
  externalMemberTools,
  type InboxToolsOptions,
  ListApprovalsToolInput,
  ReadInboxToolInput,
  WAIT_SECONDS_MAX,
  WaitForChangeToolInput,
} from './tools.js';
