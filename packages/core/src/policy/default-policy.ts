import type { TeamPolicy } from '../ports/team-policy.js';
import { pickPriority } from './priority.js';
import { formatAssignmentNotice, formatIdleNotice, formatTaskClaimPrompt } from './texts.js';

/**
 * The policy every team gets unless `openTeam` is given another: {@link pickPriority} (the lead's
 * mail before peers', FIFO within a tier), the teammate's last text as its idle notice (or a
 * fallback line), a claim prompt that shows the whole open board, and a plain assignment notice.
 * A frozen plain object, so a custom policy can spread it and replace one member.
 */
export const defaultTeamPolicy: TeamPolicy = Object.freeze({
  specificationVersion: 'v1',
  pickNext: pickPriority,
  formatIdleNotice,
  formatTaskClaimPrompt,
  formatAssignmentNotice,
});
