export { defaultTeamPolicy } from './default-policy.js';
export type { PickPolicy } from './priority.js';
export { PriorityTier, pickPriority, priorityTier } from './priority.js';
export {
  CLAIM_PROMPT_MAX_LISTED_TASKS,
  formatAssignmentNotice,
  formatIdleNotice,
  formatTaskClaimPrompt,
  idleFallbackLine,
  resumedNote,
} from './texts.js';
