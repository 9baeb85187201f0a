export type { FollowedLog } from './follow.js';
export { followTeamLog } from './follow.js';
export type { DashboardServer, ServeDashboardOptions } from './serve.js';
export { serveDashboard } from './serve.js';
export type { DashboardHandler, DashboardHandlerOptions } from './server.js';
export {
  ACTION_BODY_MAX,
  createDashboardHandler,
  generateDashboardToken,
  OPERATOR_AGENT,
} from './server.js';
export type {
  DashboardSnapshot,
  DashboardState,
  MailView,
  MemberView,
  TaskView,
  TokenRow,
} from './view-model.js';
export {
  applyHubItem,
  applyRecord,
  emptyState,
  fromSnapshot,
  MAIL_KEEP,
  MAIL_TEXT_KEEP,
  OUTPUT_KEEP,
  selectMail,
  tokenTotals,
} from './view-model.js';
