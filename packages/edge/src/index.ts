export type {
  EdgeDashboardOptions,
  EdgeEnv,
  EdgeMcpOptions,
  EdgeMember,
  EdgeMount,
  EdgeOperator,
  EdgePrincipal,
  EdgeVariables,
  TeamEdgeApp,
  TeamEdgeAppOptions,
} from './app.js';
export { createTeamEdgeApp, MCP_PATH } from './app.js';
export type { HostPolicy } from './policy.js';
export {
  EDGE_BODY_MAX_DEFAULT,
  generateEdgeToken,
  hostPolicy,
  LOOPBACK_HOSTS,
  presentedToken,
  TOKEN_HEADER,
  tokenMatcher,
} from './policy.js';
export type { StartTeamEdgeOptions, TeamEdge } from './serve.js';
export { startTeamEdge } from './serve.js';
