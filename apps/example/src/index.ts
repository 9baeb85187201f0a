export type { AppIo, ReviewCommand, RunSummary } from './app.js';
export { formatSummary, runReview } from './app.js';
export type { Command } from './args.js';
export { HELP, parseArgs, UsageError } from './args.js';
export { BoardModel, renderBoard } from './board.js';
export type { Findings } from './findings.js';
export { parseFindingsMessage, renderReport } from './findings.js';
export { inspectTeam } from './inspect.js';
export { createPolicyModel, unitsFromPaths } from './policy-model.js';
